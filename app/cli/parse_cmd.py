"""`laptime parse`: report files in, one JSON object per test result per line out.

A stable contract for scripts: keys and their meaning do not change; unknown values are
null (never NaN); warnings go to stderr as `FILE: warning: ...`; an unreadable or
unparseable file exits 1 with one line on stderr.
"""

from __future__ import annotations

import math
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from app.cli.local_reports import read_report_file
from app.cli.options import report_format_option

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
@report_format_option
def parse(files: tuple[Path, ...], fmt: str) -> None:
    """Print every test result of FILES as one JSON object per line (JSON Lines)."""
    for path in files:
        report = read_report_file(path, fmt)
        for warning in report.warnings:
            click.echo(f"{path}: warning: {warning}", err=True)
        lines = json_lines(report.results)
        for start in range(0, len(lines), _LINES_PER_WRITE):
            click.echo("\n".join(lines[start : start + _LINES_PER_WRITE]))


# One write per block of lines: few system calls, and no copy of the whole output at once.
_LINES_PER_WRITE = 8192


def json_lines(frame: pd.DataFrame) -> list[str]:
    """One JSON object per row, exactly as json.dumps writes it, encoded column by column.

    Each column's distinct values are encoded once (names and times repeat) with the C
    string encoder json.dumps uses; a column holding one value for every row goes into the
    row template as text, and each row is then one str.format call over the other columns.
    Unknown values (None, NaN, infinities) are null.
    """
    if frame.empty:
        return []
    fields: list[str] = []
    varying: list[list[str]] = []
    for key in OUTPUT_KEYS:
        encoded = _encode_column(frame[key])
        if isinstance(encoded, str):
            fields.append(f'"{key}": ' + encoded.replace("{", "{{").replace("}", "}}"))
        else:
            fields.append(f'"{key}": {{}}')
            varying.append(encoded)
    template = "{{" + ", ".join(fields) + "}}"
    if not varying:
        return [template.format()] * len(frame)
    return list(map(template.format, *varying))


def _encode_column(column: pd.Series[Any]) -> list[str] | str:
    """The JSON text of every value of one results column, or the one text they all share."""
    if column.dtype == bool:
        values = column.to_numpy()
        if values.all() or not values.any():
            return "true" if values[0] else "false"
        booleans: list[str] = np.where(values, "true", "false").tolist()
        return booleans
    if column.dtype.kind == "f":
        codes, uniques = pd.factorize(column.to_numpy())  # NaN gets -1: the "null" below
        texts = [repr(v) if math.isfinite(v) else "null" for v in uniques.tolist()]
    elif column.dtype.kind in "iu":
        codes, uniques = pd.factorize(column.to_numpy())
        texts = list(map(str, uniques.tolist()))
    else:
        codes, uniques = pd.factorize(column.to_numpy(dtype=object))
        texts = [encode_basestring_ascii(str(v)) for v in uniques.tolist()]
    if not texts:
        return "null"  # every value unknown
    if len(texts) == 1 and codes.min() == 0:
        return texts[0]  # one known value in every row
    per_row: list[str] = np.array([*texts, "null"], dtype=object)[codes].tolist()
    return per_row
