"""Which report files belong to one run: the one rule for the offline CLI and the server.

A CI job may write several reports of one pytest run: a JUnit file, the `--durations` output,
the laptime JSON. They are one run, merged as ingest.merge.merge_reports merges them, when
- a durations report names at least half of its tests in an outcome report (JUnit, laptime
  JSON...) with no durations report yet (the same file stem preferred: run.xml + run.txt);
- outcome reports of different formats name the same tests (90% of the larger set).
Any other file is a run of its own: files of one format are separate runs (two tox
environments, the repeated runs `--history` reads). The server stores an upload as one run;
its files forming several runs by this rule is said in a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from ingest.model import ParsedReport

__all__ = ["run_groups"]

# Share of a durations report's nodeids an outcome report must name (it hides fast phases).
DURATIONS_SHARED = 0.5
# Share of the larger set two outcome reports of one run name alike (the same session).
OUTCOMES_SHARED = 0.9


@dataclass
class _Run:
    members: list[int]
    stem: str
    nodeids: set[str]
    formats: set[str] = field(default_factory=set)


def run_groups(
    reports: Sequence[ParsedReport], names: Sequence[str] | None = None
) -> list[list[int]]:
    """Indices of `reports` (file `names` when known) grouped into runs, first-seen order."""
    runs: list[_Run] = []
    for index, report in enumerate(reports):
        mine = set(report.results["nodeid"].dropna().astype(object))
        stem = _stem(names[index]) if names else ""
        fits = [r for r in runs if report.format not in r.formats and _fits(report, mine, r)]
        if fits:
            run = next((r for r in fits if stem and r.stem == stem), fits[0])
            run.members.append(index)
            run.nodeids |= mine
            run.formats.add(report.format)
        else:
            runs.append(_Run([index], stem, set(mine), {report.format}))
    return [run.members for run in runs]


def _fits(report: ParsedReport, mine: set[str], run: _Run) -> bool:
    if not mine or not run.nodeids:
        return False
    shared = len(mine & run.nodeids)
    if report.format == "durations":
        return shared >= DURATIONS_SHARED * len(mine)
    if "durations" in run.formats and len(run.formats) == 1:
        return shared >= DURATIONS_SHARED * len(run.nodeids)
    return shared >= OUTCOMES_SHARED * max(len(mine), len(run.nodeids))


def _stem(name: str) -> str:
    path = PurePath(name)
    while path.suffix:
        path = path.with_suffix("")
    return str(path)
