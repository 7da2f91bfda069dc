"""Duration text in and out: the one spelling the CLI, the API and the pages share."""

from __future__ import annotations

import pytest

from analysis.durations import MAX_DURATION_CHARS, format_duration, parse_duration_s


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.004, "<0.01 s"), (0.0, "0.00 s"), (0.4212, "0.42 s"), (12.34, "12.3 s"),
     (125.0, "2 min 5 s"), (700.0, "12 min"), (3780.0, "1 h 3 min"), (float("inf"), "∞"),
     (None, "–"), (float("nan"), "–")],
)  # fmt: skip
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("text", "units", "seconds"),
    [("90d", "wdh", 90 * 86400.0), ("12w", "wdh", 12 * 604800.0), ("36h", "wdh", 129600.0),
     ("1h30m", "hms", 5400.0), ("300", "hms", 300.0)],
)  # fmt: skip
def test_parse_with_units(text: str, units: str, seconds: float) -> None:
    assert parse_duration_s(text, units=units) == seconds


@pytest.mark.parametrize(
    ("text", "units"),
    [("90", "wdh"), ("5m", "wdh"), ("1d", "hms"), ("1" * (MAX_DURATION_CHARS + 1), "hms")],
)
def test_parse_refuses_other_units_and_long_text(text: str, units: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration_s(text, units=units)


def test_parse_refuses_past_the_maximum() -> None:
    assert parse_duration_s("2h", max_s=7200.0) == 7200.0
    with pytest.raises(ValueError, match="over the limit of 2 h"):
        parse_duration_s("2h1s", max_s=7200.0)


@pytest.mark.parametrize(
    ("seconds", "text"), [(650.0, "10 min 50 s"), (700.0, "11 min 40 s"), (3569.0, "59 min 29 s"),
                          (3600.0, "1 h"), (30.0, "30.0 s")],
)  # fmt: skip
def test_exact_keeps_seconds_under_an_hour(seconds: float, text: str) -> None:
    assert format_duration(seconds, exact=True) == text
