"""The weekly digest: CI time against last week, and growth per run (not per run count)."""

from __future__ import annotations

from datetime import date

import pandas as pd

from analysis.digest.weekly import last_complete_week, weekly_digest
from notify.digest import digest_data, digest_markdown

WEEK = date(2026, 11, 23)
BEFORE = date(2026, 11, 16)


def _sums(rows: list[tuple[date, str, int, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(w, n, r, r, t) for w, n, r, t in rows],
        columns=["week", "name", "runs", "known", "total_s"],
    )


def test_growth_is_per_run_and_ranked() -> None:
    tests = _sums(
        [
            (BEFORE, "a::slow_now", 4, 4 * 1.0),
            (WEEK, "a::slow_now", 4, 4 * 3.0),  # +2 s per run
            (BEFORE, "b::more_runs", 2, 2 * 5.0),
            (WEEK, "b::more_runs", 8, 8 * 5.0),  # four times the runs, same per run: no growth
            (BEFORE, "c::bit", 4, 4 * 1.0),
            (WEEK, "c::bit", 4, 4 * 1.5),  # +0.5 s per run
            (WEEK, "d::new", 4, 4 * 9.0),  # new this week: not growth
            (BEFORE, "e::faster", 4, 4 * 9.0),
            (WEEK, "e::faster", 4, 4 * 2.0),
        ]
    )
    files = _sums([(BEFORE, "a.py", 4, 10.0), (WEEK, "a.py", 4, 30.0), (WEEK, "z.py", 1, 1.0)])
    digest = weekly_digest(tests, files, WEEK)
    assert [g.name for g in digest.growing_tests] == ["a::slow_now", "c::bit"]
    assert [g.delta_s for g in digest.growing_tests] == [2.0, 0.5]
    assert digest.ci_time_s == 12 + 40 + 6 + 36 + 8
    assert digest.previous_ci_time_s == 4 + 10 + 4 + 36
    assert [(g.name, g.delta_s) for g in digest.growing_files] == [("a.py", 5.0)]
    assert digest.previous_week == BEFORE


def test_the_last_complete_week_starts_on_the_monday_before_this_one() -> None:
    assert last_complete_week(date(2026, 12, 4)) == WEEK  # a Friday
    assert last_complete_week(date(2026, 11, 30)) == WEEK  # a Monday


def test_markdown_escapes_names_and_data_carries_the_text() -> None:
    tests = _sums([(BEFORE, "t::x`|<b>\n", 1, 1.0), (WEEK, "t::x`|<b>\n", 1, 2.0)])
    digest = weekly_digest(tests, _sums([]), WEEK)
    text = digest_markdown("proj", digest)
    assert "`t::x'\\|<b> `" in text
    assert "CI test time: 0.0 min (last week 0.0 min, +0.0 min (+100.0%))" in text
    assert "**Files that grew most**: none grew" in text
    data = digest_data("proj", digest)
    assert data["text"] == text
    assert data["growing_tests"][0]["delta_s"] == 1.0
