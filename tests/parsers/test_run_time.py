"""Dating a run: the uploader's started_at, else a plausible report timestamp, else receipt."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ingest.run_time import REPORT_MAX_AGE, REPORT_MAX_AHEAD, run_start

RECEIVED = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def test_the_uploaders_start_wins_over_the_report() -> None:
    sent = datetime(2020, 1, 1, tzinfo=UTC)
    start = run_start(sent=sent, reported=RECEIVED, received=RECEIVED, backfill=False)
    assert (start.at, start.warning) == (sent, None)


@pytest.mark.parametrize(
    "offset",
    [timedelta(0), -REPORT_MAX_AGE, REPORT_MAX_AHEAD, timedelta(hours=-3)],
)
def test_a_plausible_report_timestamp_dates_the_run(offset: timedelta) -> None:
    start = run_start(sent=None, reported=RECEIVED + offset, received=RECEIVED, backfill=False)
    assert (start.at, start.warning) == (RECEIVED + offset, None)


def test_no_timestamp_anywhere_means_the_time_received() -> None:
    start = run_start(sent=None, reported=None, received=RECEIVED, backfill=False)
    assert (start.at, start.warning) == (RECEIVED, None)


def test_an_old_report_is_dated_when_received_with_a_warning_naming_it() -> None:
    old = datetime(2024, 5, 1, 10, tzinfo=UTC)
    start = run_start(sent=None, reported=old, received=RECEIVED, backfill=False)
    assert start.at == RECEIVED
    assert start.warning is not None
    assert "2024-05-01T10:00:00+00:00" in start.warning
    assert "--backfill" in start.warning


def test_backfill_keeps_old_dates_but_never_the_future() -> None:
    old = datetime(2024, 5, 1, tzinfo=UTC)
    assert run_start(sent=None, reported=old, received=RECEIVED, backfill=True).at == old
    future = datetime(2099, 1, 1, tzinfo=UTC)
    start = run_start(sent=None, reported=future, received=RECEIVED, backfill=True)
    assert start.at == RECEIVED
    assert start.warning is not None
    assert "future" in start.warning


def test_a_naive_timestamp_is_utc() -> None:
    naive = datetime(2026, 12, 3, 11, 0)
    start = run_start(sent=None, reported=naive, received=RECEIVED, backfill=False)
    assert start.at == naive.replace(tzinfo=UTC)
