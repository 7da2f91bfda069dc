"""Which report files belong to one run: the one rule for the offline CLI and the server.

A CI job may write several reports of one pytest run: a JUnit file, the `--durations` output,
the laptime JSON. Files of different formats that name the same tests (at least half of the
smaller file's nodeids) are one run and are merged (ingest.merge.merge_reports); files of one
format are separate runs (two tox environments, or the repeated runs `--history` reads).
The server stores an upload as one run; its files forming several runs by this rule is said
in a warning.
"""

from __future__ import annotations

from collections.abc import Sequence

from ingest.model import ParsedReport

__all__ = ["MIN_SHARED", "run_groups"]

# Share of the smaller report's nodeids the other must name for the two to be one run.
MIN_SHARED = 0.5


def run_groups(reports: Sequence[ParsedReport]) -> list[list[int]]:
    """Indices of `reports` grouped into runs, in first-seen order (see the module doc)."""
    groups: list[list[int]] = []
    names: list[set[str]] = []
    formats: list[set[str]] = []
    for index, report in enumerate(reports):
        mine = set(report.results["nodeid"].dropna().astype(object))
        for group, (seen, kinds) in enumerate(zip(names, formats, strict=True)):
            if report.format in kinds or not mine or not seen:
                continue
            if len(mine & seen) >= MIN_SHARED * min(len(mine), len(seen)):
                groups[group].append(index)
                seen |= mine
                kinds.add(report.format)
                break
        else:
            groups.append([index])
            names.append(set(mine))
            formats.append({report.format})
    return groups
