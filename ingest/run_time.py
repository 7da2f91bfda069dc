"""When a run happened: the uploader's word, else the report's own clock if plausible.

A report's timestamp comes from the CI machine's clock and from whatever the producer writes
(some write the time the file was converted, some a fixed date). Trusted blindly it put 11 of
21 real uploads outside the default 30-day window and one in 2099, so it is only believed
within a window around the time the upload was received, unless the upload asks to keep old
dates (`backfill`, for importing history).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

# How far a report's own timestamp may lie from the time its upload was received.
REPORT_MAX_AGE = timedelta(days=7)
REPORT_MAX_AHEAD = timedelta(minutes=5)


@dataclass(frozen=True)
class RunStart:
    """The moment a run is dated at, and a warning when the report's timestamp was ignored."""

    at: datetime
    warning: str | None = None


def run_start(
    *, sent: datetime | None, reported: datetime | None, received: datetime, backfill: bool
) -> RunStart:
    """Date a run: `sent` (the upload's started_at), else `reported` (the report's timestamp)
    when within [received - 7 days, received + 5 min] (any past date with `backfill`), else
    `received`, with a warning naming the ignored timestamp."""
    if sent is not None:
        return RunStart(_aware(sent))
    if reported is None:
        return RunStart(received)
    reported = _aware(reported)
    too_new = reported > received + REPORT_MAX_AHEAD
    too_old = reported < received - REPORT_MAX_AGE and not backfill
    if not (too_new or too_old):
        return RunStart(reported)
    why = "is in the future" if too_new else f"is older than {REPORT_MAX_AGE.days} days"
    hint = "" if too_new else "; upload with --backfill to keep old report dates"
    return RunStart(
        received,
        f"the report's timestamp {reported.isoformat()} {why}: the run is dated when its "
        f"upload was received ({received.isoformat(timespec='seconds')}){hint}",
    )


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
