"""Every GET form of every project page, sent back as the page rendered it (what a visitor's
Apply does without touching it), and with its text fields cleared: the page answers, never a
422 for an "any" option or an empty field it rendered itself."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import lxml.html  # type: ignore[import-untyped]
import pytest

from tests.pages.conftest import AUGMIX_A, Site, session_cookies

PAGES = [
    "/p/{slug}",
    "/p/{slug}/time",
    "/p/{slug}/files/tests/test_transforms.py",
    "/p/{slug}/test?nodeid=" + quote(AUGMIX_A),
    "/p/{slug}/recommendations",
    "/p/{slug}/reductions",
    "/p/{slug}/flaky",
    "/p/{slug}/changes",
]


def _fields(form: lxml.html.HtmlElement, *, cleared: bool) -> list[tuple[str, str]]:
    """What a browser sends for the form: each named input's value, each select's chosen option
    (else its first); text and number inputs emptied when `cleared`."""
    sent = []
    for element in form.cssselect("input[name], select[name]"):
        name = element.get("name")
        if element.tag == "select":
            options = element.cssselect("option")
            chosen = [o for o in options if o.get("selected") is not None] or options[:1]
            for option in chosen:
                sent.append((name, option.get("value", option.text_content())))
        elif element.get("type") in ("checkbox", "radio") and element.get("checked") is None:
            continue
        else:
            kind = element.get("type", "text")
            sent.append(
                (name, "" if cleared and kind in ("text", "number") else element.get("value", ""))
            )
    return sent


@pytest.mark.parametrize("path", PAGES)
def test_a_page_takes_back_its_own_forms(site: Site, path: str) -> None:
    cookies = session_cookies(site.url, site.private.read_token)
    url = path.format(slug=site.private.slug)
    # The filter bar's empty "all" values are redirected to the URL without them: followed.
    with httpx.Client(
        base_url=site.url, cookies=cookies, timeout=60, follow_redirects=True
    ) as client:
        shown = client.get(url)
        assert shown.status_code == 200, shown.text[:300]
        forms = [
            f for f in lxml.html.fromstring(shown.text).cssselect("form")
            if (f.get("method") or "get").lower() == "get"
        ]  # fmt: skip
        assert forms, url
        for form in forms:
            action = form.get("action") or url.split("?")[0]
            for cleared in (False, True):
                sent = client.get(action, params=_fields(form, cleared=cleared))
                assert sent.status_code == 200, (url, action, cleared, sent.text[:300])
                assert sent.url.path == action, (url, sent.url)  # not sent to sign in
