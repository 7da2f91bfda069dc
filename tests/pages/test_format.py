"""Human number formatting: every spelling the pages and figures use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from jinja2 import Environment

from app.pages.format import ago_text, register_filters, timestamp_text
from figures.humanize import (
    count_text,
    duration_text,
    memory_text,
    money_text,
    percent_text,
    time_scale,
)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.004, "<0.01 s"),
        (0.0, "0.00 s"),
        (0.35, "0.35 s"),
        (1.23, "1.2 s"),
        (59.94, "59.9 s"),
        (59.96, "1 min"),
        (130, "2 min 10 s"),
        (599.4, "9 min 59 s"),
        (2280.0, "38 min"),  # the example: not 2280.0
        (3569, "59 min"),
        (3575, "1 h"),  # 59.6 min rounds to 60
        (7500, "2 h 5 min"),
        (617 * 60, "10 h 17 min"),
        (-90, "-1 min 30 s"),
        (None, "–"),
        (float("nan"), "–"),
    ],
)
def test_duration_text(seconds: float | None, text: str) -> None:
    assert duration_text(seconds) == text


def test_percent_count_memory_money() -> None:
    assert percent_text(0.3436) == "34.4%"
    assert percent_text(0.8431, digits=0) == "84%"
    assert percent_text(float("nan")) == "–"
    assert count_text(1234567) == "1,234,567"
    assert count_text(None) == "–"
    assert memory_text(512) == "512 MiB"
    assert memory_text(3072) == "3.0 GiB"
    assert money_text(12.4) == "$12.40"
    assert money_text(900, "compute minutes") == "900.0 compute minutes"


@pytest.mark.parametrize(
    ("max_s", "scale"),
    [(90, (1.0, "s")), (120, (60.0, "min")), (3 * 3600 - 1, (60.0, "min")), (20000, (3600.0, "h"))],
)
def test_time_scale(max_s: float, scale: tuple[float, str]) -> None:
    assert time_scale(max_s) == scale


def test_timestamps() -> None:
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    assert timestamp_text("2026-12-02T10:30:00+00:00") == "2026-12-02 10:30 UTC"
    assert timestamp_text(pd.Timestamp("2026-12-02 10:30", tz="UTC")) == "2026-12-02 10:30 UTC"
    assert timestamp_text(pd.NaT) == "–"
    assert ago_text(now - timedelta(seconds=30), now=now) == "just now"
    assert ago_text(now - timedelta(minutes=5), now=now) == "5 min ago"
    assert ago_text(now - timedelta(hours=3, minutes=59), now=now) == "3 h ago"
    assert ago_text(now - timedelta(days=1, hours=2), now=now) == "1 day ago"
    assert ago_text(now - timedelta(days=9), now=now) == "9 days ago"


def test_filters_treat_a_missing_template_value_as_unknown() -> None:
    env = Environment()
    register_filters(env)
    template = env.from_string("{{ plan.cost | money }} {{ x | duration }} {{ y | percent }}")
    assert template.render(plan={}, x=2280, y=0.5) == "– 38 min 50.0%"
