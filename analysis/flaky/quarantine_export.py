"""A quarantine in another runner's own words, with the selection writers of analysis.ci.

A runner without laptime's plugin cannot be told "run it, but do not fail for it", so the job
splits in two: the gating run selects every known test but the quarantined ones, and a second
run, whose failures do not fail the job (`continue-on-error`, `allow_failure`), selects the
quarantined ones and uploads its report, so their history goes on. Runners that select whole
files only (Jest, RSpec, PHPUnit...) leave a quarantined test in the gating run when its file
holds tests that are not quarantined: those are listed in `still_gating`. A run with
nothing to select has no command (skip it).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import pandas as pd

from analysis.ci.runner_commands import COMMAND_RUNNERS, FILE_ONLY, JobSelection, select_jobs
from analysis.errors import AnswerError

# pytest quarantines at run time through the plugin; every other runner is exported.
EXPORT_RUNNERS = tuple(r for r in COMMAND_RUNNERS if r != "pytest")


@dataclass(frozen=True)
class QuarantineExport:
    """The two selections of a quarantined job in `runner`'s words."""

    runner: str
    quarantined: tuple[str, ...]  # quarantined tests the history knows
    gating: JobSelection  # every known test but the quarantined: its failures fail the job
    quarantine: JobSelection  # the quarantined tests: run, reported, never failing the job
    still_gating: tuple[str, ...]  # quarantined tests the gating run cannot leave out


def export_quarantine(
    runner: str, units: pd.Series, quarantined: Collection[str]
) -> QuarantineExport:
    """The selections for `runner`. `units` maps every known nodeid to its selection unit."""
    if runner not in EXPORT_RUNNERS:
        raise AnswerError(f"runner must be one of {', '.join(EXPORT_RUNNERS)}, not {runner!r}")
    known = [str(n) for n in units.index]
    held = sorted(set(quarantined) & set(known))
    rest = [n for n in known if n not in set(held)]
    gating, quarantine = select_jobs(runner, units, [rest, held])
    # A selection of nothing is no command: a file runner given no file would run them all.
    if not held:
        quarantine = JobSelection(runner, (), "")
    if not rest:
        gating = JobSelection(runner, (), "")
    still: list[str] = []
    if runner in FILE_ONLY:
        units_of_rest = {str(units[n]) for n in rest}
        still = [n for n in held if str(units[n]) in units_of_rest]
    return QuarantineExport(runner, tuple(held), gating, quarantine, tuple(still))
