"""Rows of a native .NET report (NUnit, TRX) -> ParsedReport, shared by both parsers.

Identity: nodeid `Namespace.Class::Name`, where Name keeps a theory's arguments
(`Divide(12,3)`), so each theory case is its own test; `function` is the method and `params`
the arguments. The class is the unit `dotnet test --filter` selects, so it is also `file`
(runner `dotnet`). A name repeated within one report is another execution (" #k").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ingest.model import ParsedReport, ReportFormat, SessionInfo, results_frame
from ingest.parsers.executions import number_executions
from ingest.parsers.junit_expat import MAX_MESSAGE_CHARS
from ingest.parsers.junit_times import durations_s


@dataclass
class DotnetRow:
    """One executed test case as the native report states it."""

    classname: str | None
    name: str
    method: str | None
    outcome: str
    time: str | None  # seconds as written ("0.0123"); None = unknown
    suite: str | None
    message: str | None


def split_theory(name: str) -> tuple[str, str | None]:
    """`Divide(12,3)` -> ("Divide", "12,3"); a name without arguments -> (name, None)."""
    at = name.find("(")
    if at > 0 and name.endswith(")"):
        return name[:at], name[at + 1 : -1]
    return name, None


def short_name(name: str, classname: str | None) -> str:
    """The test's name without its class prefix (`NS.C.M(1)` -> `M(1)` for class `NS.C`)."""
    if classname and name.startswith(classname + "."):
        return name[len(classname) + 1 :]
    return name


def class_of(fullname: str) -> str | None:
    """`NS.C.M(1.5)` -> `NS.C`: the part before the last dot outside the arguments."""
    base, _ = split_theory(fullname)
    return base.rsplit(".", 1)[0] if "." in base else None


def message_text(text: str | None) -> str | None:
    """A failure or skip message, trimmed to the stored length."""
    text = (text or "").strip()
    return text[:MAX_MESSAGE_CHARS] or None


def build_report(
    rows: list[DotnetRow], fmt: ReportFormat, session: SessionInfo, warnings: list[str]
) -> ParsedReport:
    """The results frame of the rows, repeated nodeids numbered as executions."""
    names = [short_name(r.name, r.classname) for r in rows]
    split = [split_theory(n) for n in names]
    nodeids = np.array(
        [f"{r.classname}::{n}" if r.classname else n for r, n in zip(rows, names, strict=True)],
        dtype=object,
    )
    renamed = number_executions(nodeids, np.zeros(len(rows), dtype=bool)) if rows else 0
    if renamed:
        warnings.append(
            f"{renamed} test case(s) repeat the name of an earlier one: kept as separate "
            "executions, their nodeids suffixed ' #2', ' #3'... in document order"
        )
    columns: dict[str, Any] = {
        "nodeid": nodeids.tolist(),
        "file": [r.classname for r in rows],
        "classname": [r.classname for r in rows],
        "function": [r.method or f for r, (f, _) in zip(rows, split, strict=True)],
        "params": [p for _, p in split],
        "outcome": [r.outcome for r in rows],
        "duration_s": durations_s([r.time for r in rows], warnings),
        "suite": [r.suite for r in rows],
        "message": [r.message for r in rows],
    }
    return ParsedReport(
        format=fmt,
        results=results_frame(columns),
        warnings=warnings,
        session=session,
        runner="dotnet",
    )
