"""Which hosts a webhook may reach: public addresses only, unless the operator allows more.

A webhook makes the server send requests where an admin says; without this check it could
reach the server's own network (a cloud metadata service at 169.254.169.254, a database on
loopback, a router on 10/8). The host is resolved and EVERY address it names is checked, at
registration and again at each delivery (a name's addresses can change in between), and the
delivery connects to the address that was checked, not to a second lookup.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from notify.targets import WebhookUrlError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[..., Sequence[tuple[Any, ...]]]

ALLOW_SETTING = "LAPTIME_WEBHOOK_ALLOW_PRIVATE"
CGNAT = ipaddress.ip_network("100.64.0.0/10")
# NAT64 (RFC 6052): 64:ff9b::/96 carries an IPv4 address that a NAT64 gateway reaches.
NAT64 = ipaddress.ip_network("64:ff9b::/96")
DEFAULT_PORTS = {"http": 80, "https": 443}


class WebhookAddressError(WebhookUrlError):
    """The URL's host is, or resolves to, an address webhooks may not reach (a 422)."""

    code = "webhook-address-refused"


def address_kind(address: IPAddress) -> str | None:
    """Why `address` is not a public one ("loopback", "private"...), or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or (
            ipaddress.IPv4Address(int(address) & 0xFFFFFFFF) if address in NAT64 else None
        )
        if embedded is not None:
            return address_kind(embedded)
    # Order matters: 127/8 is also "private" to ipaddress, and the precise word helps.
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("carrier-grade NAT", isinstance(address, ipaddress.IPv4Address) and address in CGNAT),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
        ("not globally routed", not address.is_global),
    )
    return next((kind for kind, hit in checks if hit), None)


def resolve_public(
    host: str,
    port: int,
    *,
    allow_private: bool,
    resolve: Resolver = socket.getaddrinfo,
) -> list[str]:
    """The addresses `host` names, when every one may be reached; else WebhookAddressError.
    With `allow_private` nothing is refused and a name is not looked up ([]: connect by name)."""
    try:
        found = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        if allow_private:
            return []
        try:
            infos = resolve(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise WebhookAddressError(f"the host {host!r} does not resolve ({exc})") from exc
        # The scope of a link-local IPv6 address ("fe80::1%eth0") is no part of the address.
        found = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not found:
        raise WebhookAddressError(f"the host {host!r} does not resolve to any address")
    addresses = list(dict.fromkeys(found))
    if not allow_private:
        for address in addresses:
            kind = address_kind(address)
            if kind is not None:
                shown = "" if str(address) == host.strip("[]") else f" ({host!r})"
                raise WebhookAddressError(
                    f"{address}{shown} is a {kind} address: webhooks call public addresses "
                    f"only (an operator may allow private ones with {ALLOW_SETTING}=true)"
                )
    return [str(address) for address in addresses]


def check_address(
    url: str, *, allow_private: bool, resolve: Resolver = socket.getaddrinfo
) -> list[str]:
    """The addresses `url`'s host may be reached at (checked as above); the URL itself must
    already have passed notify.targets.check_url."""
    parts = urlsplit(url)
    port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower(), 80)
    return resolve_public(parts.hostname or "", port, allow_private=allow_private, resolve=resolve)
