"""Webhook addresses that reach inside the server's network are refused: every address a host
resolves to is checked, IPv4, IPv6 and IPv4 mapped into IPv6 alike, unless the operator allows
private addresses."""

from __future__ import annotations

import socket

import pytest

from notify.addresses import WebhookAddressError, check_address, resolve_public

REFUSED = [
    ("http://127.0.0.1/hook", "loopback"),
    ("http://127.8.9.10:8080/hook", "loopback"),
    ("http://10.1.2.3/hook", "private"),
    ("http://172.16.0.1/hook", "private"),
    ("http://192.168.1.1/hook", "private"),
    ("http://169.254.169.254/latest/meta-data", "link-local"),
    ("http://100.64.0.1/hook", "carrier-grade NAT"),
    ("http://224.0.0.1/hook", "multicast"),
    ("http://0.0.0.0/hook", "unspecified"),
    ("http://[::1]/hook", "loopback"),
    ("http://[::]/hook", "unspecified"),
    ("http://[fe80::1]/hook", "link-local"),
    ("http://[fc00::1]/hook", "private"),
    ("http://[ff02::1]/hook", "multicast"),
    ("http://[::ffff:127.0.0.1]/hook", "loopback"),
    ("http://[::ffff:10.0.0.1]/hook", "private"),
    ("http://[::ffff:169.254.169.254]/hook", "link-local"),
    ("http://[64:ff9b::a9fe:a9fe]/hook", "link-local"),
    ("http://localhost:9/hook", "loopback"),
]


@pytest.mark.parametrize(("url", "kind"), REFUSED)
def test_private_addresses_are_refused_with_the_reason(url: str, kind: str) -> None:
    with pytest.raises(WebhookAddressError) as refused:
        check_address(url, allow_private=False)
    assert kind in str(refused.value)
    assert "LAPTIME_WEBHOOK_ALLOW_PRIVATE" in str(refused.value)
    assert 400 <= refused.value.status < 500


@pytest.mark.parametrize(("url", "kind"), REFUSED)
def test_the_operator_may_allow_private_addresses(url: str, kind: str) -> None:
    check_address(url, allow_private=True)


def test_public_addresses_pass_and_are_what_is_connected_to() -> None:
    assert resolve_public("93.184.216.34", 443, allow_private=False) == ["93.184.216.34"]
    assert resolve_public("2606:2800:220:1::1", 80, allow_private=False) == ["2606:2800:220:1::1"]


def test_every_address_a_name_resolves_to_is_checked() -> None:
    """A name with one public and one private address is refused (a rebinding name)."""

    def resolve(host: str, port: int, *args: object, **kw: object) -> list[tuple]:  # type: ignore[type-arg]
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port)),
        ]

    with pytest.raises(WebhookAddressError, match=r"10\.0\.0\.7 .*private"):
        resolve_public("hooks.example", 443, allow_private=False, resolve=resolve)


def test_a_name_that_does_not_resolve_is_refused_clearly() -> None:
    with pytest.raises(WebhookAddressError, match="does not resolve"):
        resolve_public("no-such-host.invalid", 443, allow_private=False)
