"""`laptime parse`: report files in, one JSON object per test result per line out.

A stable contract for scripts: keys and their meaning do not change; unknown values are
null (never NaN); warnings go to stderr as `FILE: warning: ...`; an unreadable or
unparseable file exits 1 with one line on stderr.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from app.cli.local_reports import read_report_file

FORMATS = ("auto", "junit", "durations", "laptime-json")
# The keys every line carries, in this order.
OUTPUT_KEYS = (
    "nodeid",
    "file",
    "classname",
    "function",
    "params",
    "outcome",
    "duration_s",
    "setup_s",
    "call_s",
    "teardown_s",
    "attempts",
    "flaky",
    "suite",
    "message",
)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="Report format of the files.",
)
def parse(files: tuple[Path, ...], fmt: str) -> None:
    """Print every test result of FILES as one JSON object per line (JSON Lines)."""
    for path in files:
        report = read_report_file(path, fmt)
        for warning in report.warnings:
            click.echo(f"{path}: warning: {warning}", err=True)
        frame = report.results
        columns = [frame[key].tolist() for key in OUTPUT_KEYS]
        lines = [
            json.dumps(dict(zip(OUTPUT_KEYS, map(_json_value, row), strict=True)))
            for row in zip(*columns, strict=True)
        ]
        if lines:
            click.echo("\n".join(lines))


def _json_value(value: Any) -> Any:
    """NaN and pandas' missing markers become null; numpy scalars become Python ones."""
    if value is None:
        return None
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, bool | int | str):
        return value
    if hasattr(value, "item"):
        return _json_value(value.item())
    return str(value)
