"""`laptime reduce`: covering sets for parametrize explosions and CI-matrix reduction, offline."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import click
import pandas as pd

from analysis.durations import format_duration
from analysis.reduce.matrix_reduce import GROUP_BYS, MatrixVerdict, reduce_matrix
from analysis.reduce.parametrize import (
    CoveringProposal,
    Explosion,
    find_explosions,
    propose_covering,
)
from app.cli.json_out import echo_json
from app.cli.local_reports import LocalData, load_local
from app.schemas import reduce as answers
from app.work_limits import MAX_TOP_EXPLOSIONS
from figures.humanize import percent_text

# A label given with FILE@k=v under this key sets the run's commit instead of a label.
COMMIT_KEY = "commit"


@dataclass(frozen=True)
class FileSpec:
    """One FILE argument: the path and the labels given after '@'."""

    path: str
    labels: dict[str, str]


@click.group()
def reduce() -> None:
    """Propose smaller test matrices: fewer parametrize variants, fewer CI cells."""


@reduce.command("parametrize")
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--strength",
    type=click.Choice(["1", "2"]),
    default="2",
    show_default=True,
    help="1: every value of every argument once; 2: every pair of values.",
)
@click.option(
    "--top",
    type=click.IntRange(min=1, max=MAX_TOP_EXPLOSIONS),
    default=10,
    show_default=True,
    help=f"Costliest parametrized tests to propose for (at most {MAX_TOP_EXPLOSIONS}).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def parametrize(files: tuple[str, ...], strength: str, top: int, as_json: bool) -> None:
    """Rank the costliest parametrized tests in FILE... and propose covering sets."""
    data = load_local(list(files))
    explosions = find_explosions(data.results, data.runs, top=top)
    entries = [(e, _proposal(e, int(strength))) for e in explosions]
    if as_json:
        flat = [answers.ExplosionWithProposal.pair(e, p) for e, p in entries]
        echo_json(answers.LocalParametrize(strength=int(strength), explosions=flat))
        return
    if not entries:
        click.echo("no parametrized test with two or more variants in these reports")
        return
    for explosion, proposal in entries:
        click.echo(_explosion_text(explosion))
        if proposal is None:
            click.echo(f"  no proposal: {explosion.values_note}")
            continue
        bound = "proven minimal" if proposal.proven_minimal else "not proven minimal"
        click.echo(
            f"  strength {proposal.strength}: {len(proposal.rows)} of {proposal.variants} "
            f"variants (lower bound {proposal.lower_bound}, {bound}); "
            f"{format_duration(proposal.current_s)} -> {format_duration(proposal.proposed_s)} "
            f"per run, {_saving_text(proposal)}"
        )
        unmeasured = sum(1 for r in proposal.rows if not r.measured)
        if unmeasured:
            click.echo(f"  {unmeasured} proposed variant(s) never ran: timed at the median")
        click.echo("")
        for line in proposal.code.splitlines():
            click.echo(f"    {line}")
        click.echo("")


@reduce.command("matrix")
@click.argument("files", nargs=-1, required=True, metavar="FILE[@k=v,...]...")
@click.option(
    "--by",
    "group_by",
    type=click.Choice(GROUP_BYS),
    default="file",
    show_default=True,
    help="Group tests by file or by marker.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=1.0, max=1000.0),
    default=1.5,
    show_default=True,
    help="Durations differ when one value's median is this many times another's.",
)
@click.option(
    "--label-from-name",
    "name_pattern",
    default=None,
    metavar="REGEX",
    help="Regex with named groups read from each file name, e.g. 'py(?P<python>[0-9.]+)'.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def matrix(
    files: tuple[str, ...],
    group_by: str,
    threshold: float,
    name_pattern: str | None,
    as_json: bool,
) -> None:
    """Say which label dimensions each group can run on one value for pull requests.

    Each FILE is one CI job; its labels come from the laptime JSON session (python,
    platform), from --label-from-name, then from FILE@k=v,k2=v2 (commit=... sets the
    commit the runs are compared on).
    """
    specs = [parse_file_spec(f) for f in files]
    pattern = _compile(name_pattern)
    data = load_local([s.path for s in specs])
    runs = label_runs(data, specs, pattern)
    verdicts = reduce_matrix(
        data.results,
        runs,
        group_by="marker" if group_by == "marker" else "file",
        threshold=threshold,
    )
    if as_json:
        verdict_list = [answers.MatrixVerdict.of(v) for v in verdicts]
        matrix = answers.Matrix(group_by=group_by, verdicts=verdict_list)
        echo_json(matrix, exclude=frozenset({"group_by"}))
        return
    if not verdicts:
        click.echo(
            "no label dimension has two or more values: label the files with FILE@k=v "
            "or --label-from-name"
        )
        return
    for verdict in verdicts:
        click.echo(_verdict_text(verdict))


def parse_file_spec(arg: str) -> FileSpec:
    """Split `FILE@k=v,k2=v2` into the path and its labels (an existing path is taken whole)."""
    if "@" not in arg or Path(arg).exists():
        return FileSpec(path=arg, labels={})
    path, _, spec = arg.rpartition("@")
    labels: dict[str, str] = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise click.ClickException(f"{arg}: labels after '@' must look like k=v,k2=v2")
        labels[key.strip()] = value.strip()
    return FileSpec(path=path, labels=labels)


def label_runs(
    data: LocalData, specs: list[FileSpec], pattern: re.Pattern[str] | None
) -> pd.DataFrame:
    """The runs frame with labels (session, then file name, then '@') and commits filled in."""
    runs = data.runs.copy()
    labels_col: list[dict[str, str]] = []
    commits: list[str | None] = []
    # Per run, not per file: the files of one run (a JUnit and its durations) share its labels.
    for members in data.members:
        labels: dict[str, str] = {}
        for index in members:
            spec, report = specs[index], data.reports[index]
            if report.session.python:
                labels["python"] = report.session.python
            if report.session.platform:
                labels["platform"] = report.session.platform
            if pattern is not None:
                match = pattern.search(Path(spec.path).name)
                if match:
                    labels.update({k: v for k, v in match.groupdict().items() if v is not None})
            labels.update(spec.labels)
        commits.append(labels.pop(COMMIT_KEY, None))
        labels_col.append(labels)
    runs["labels"] = pd.Series(labels_col, index=runs.index, dtype=object)
    runs["commit"] = pd.Series(commits, index=runs.index, dtype=object)
    return runs


def _compile(pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise click.ClickException(f"--label-from-name: invalid regex: {exc}") from exc
    if not compiled.groupindex:
        raise click.ClickException("--label-from-name needs named groups, e.g. (?P<python>...)")
    return compiled


def _proposal(explosion: Explosion, strength: int) -> CoveringProposal | None:
    if explosion.values_source is None:
        return None
    return propose_covering(explosion, strength)


def _saving_text(proposal: CoveringProposal) -> str:
    """ "saves 12 s (40%)"; a share of nothing is no share (never "nan%")."""
    if not proposal.current_s > 0:
        return "saves nothing: the variants took 0 s"
    return f"saves {format_duration(proposal.saved_s)} ({percent_text(proposal.saved_fraction, 0)})"


def _explosion_text(e: Explosion) -> str:
    if math.isnan(e.file_duration_s):
        share = "file time unknown"
    elif e.file_duration_s > 0:
        share = f"{percent_text(e.share_of_file, 0)} of its file"
    else:
        share = "its file took 0 s"
    source = e.values_source or "unknown"
    return (
        f"{e.test}: {len(e.variants)} variants, {format_duration(e.duration_s)} per run "
        f"({share}), values: {source}"
    )


def _verdict_text(v: MatrixVerdict) -> str:
    head = f"[{v.verdict}] {v.group} x {v.dimension} ({', '.join(v.values)}): {v.recommendation}"
    lines = [head]
    for ev in v.evidence:
        if ev.kind == "outcome":
            lines.append(
                f"    {ev.test} @ {ev.context}: passed on {', '.join(ev.passed_on)}, "
                f"failed on {', '.join(ev.failed_on)}"
            )
        else:
            medians = ", ".join(f"{k}={format_duration(m)}" for k, m in ev.median_s.items())
            lines.append(f"    {ev.test} @ {ev.context}: {medians}")
    return "\n".join(lines)
