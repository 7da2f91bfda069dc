"""The parsed-report contract every parser returns and every consumer reads."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from model.frames import OUTCOMES, RESULT_COLUMNS

__all__ = ["OUTCOMES", "RESULT_COLUMNS", "ParsedReport", "ReportParseError", "SessionInfo"]

ReportFormat = Literal["junit", "durations", "laptime-json", "nunit", "trx"]
FLOAT_COLUMNS = (
    "duration_s",
    "setup_s",
    "call_s",
    "teardown_s",
    "last_attempt_s",
    "peak_rss_mib",
    "cpu_s",
    "seq",  # an integer order, float here so that unknown is NaN
    "gc_s",
    "heap_scans",  # integer counts, float here so that unknown is NaN
    "heap_objects",
    "cpu_wait_s",
)
# The FLOAT_COLUMNS only the laptime pytest plugin measures: CPU, order, heap, run-queue
# wait.
MEASURE_COLUMNS = ("cpu_s", "seq", "gc_s", "heap_scans", "heap_objects", "cpu_wait_s")


@dataclass(frozen=True)
class SessionInfo:
    """What a report knows about the CI job that produced it (laptime JSON carries most)."""

    started_at: str | None = None  # ISO 8601
    wall_s: float | None = None
    python: str | None = None
    platform: str | None = None
    cpu_count: int | None = None
    memory_total_mib: float | None = None
    xdist_workers: int | None = None
    peak_rss_mib: float | None = None
    peak_rss_source: str | None = None  # "cgroup" | "process-tree"
    # The container's cgroup peak, every process in it counted; labelled apart, never sized on.
    cgroup_peak_mib: float | None = None
    # How the tests' peak RSS was measured: "hwm-reset" | "sampling" | "endpoints" | "mixed".
    test_peak_rss_method: str | None = None
    hostname: str | None = None
    pytest: str | None = None  # pytest version that ran the tests
    runner: str | None = None  # ingest.parsers.runners.RUNNERS key (detected or overridden)
    # What the job model needs; docs/laptime-json.md defines each.
    cpu_s: float | None = None  # process + reaped children, over the span of wall_s
    startup_s: float | None = None  # process creation to collection start
    collect_s: float | None = None
    collected_tests: int | None = None
    collected_files: int | None = None
    collect_by_file: dict[str, float] | None = None  # file -> seconds collecting it
    invocation: str | None = None  # "paths" | "pyargs"
    rootdir: str | None = None
    job_wall_s: float | None = None  # the CI job's wall up to the report, when known
    exit_s: float | None = None  # session end to process exit (`laptime-ci run`)
    # gc-tracked objects (heap-bound test time)
    heap_objects_start: int | None = None  # when collection started
    heap_objects_collected: int | None = None  # when collection finished
    heap_objects_end: int | None = None  # after the last test
    # Seconds the tests' thread(s) were runnable but waiting for a CPU
    cpu_wait_s: float | None = None
    # The state glibc's malloc ran the tests in: model.frames.MALLOC_STATES
    malloc: str | None = None


@dataclass(frozen=True)
class ParsedReport:
    """A parsed test report: one results frame plus what the parser learned about it."""

    format: ReportFormat
    results: pd.DataFrame  # columns exactly RESULT_COLUMNS
    warnings: list[str] = field(default_factory=list)
    # --durations output hides rows under a threshold; analysis must say the data is partial.
    hidden_rows: int | None = None
    hidden_threshold_s: float | None = None
    # True when the source could not tell how many rows it hid (pytest 3.9-5.4 print "0.00").
    hidden_rows_unknown: bool = False
    session: SessionInfo = field(default_factory=SessionInfo)
    properties: dict[str, str] = field(default_factory=dict)
    # The runner that wrote the report (ingest.parsers.runners.RUNNERS) and whether `file`
    # holds paths derived from class names (Java's src/test/java convention), not written.
    runner: str = "generic"
    file_derived: bool = False

    @property
    def partial(self) -> bool:
        """True when the report is known or suspected to omit some results."""
        return bool(self.hidden_rows) or self.hidden_rows_unknown


class ReportParseError(Exception):
    """The one error type parsers raise: a stable code plus a precise, human message."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        filename: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.filename = filename
        self.line = line
        self.column = column
        super().__init__(self.describe())

    def describe(self) -> str:
        """`file:line:col: [code] message`, leaving out the parts that are unknown."""
        where = self.filename or "<report>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: [{self.code}] {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form stored on a failed upload."""
        return {
            "code": self.code,
            "message": self.message,
            "file": self.filename,
            "line": self.line,
            "column": self.column,
        }


def empty_results() -> pd.DataFrame:
    """A results frame with the contract's columns and no rows."""
    # Built once: building it costs milliseconds, and every merge of one report asked for it.
    return _empty_results_once().copy()


@functools.cache
def _empty_results_once() -> pd.DataFrame:
    return results_frame({c: [] for c in RESULT_COLUMNS})


def results_frame(columns: dict[str, Any]) -> pd.DataFrame:
    """Build a results frame from column arrays, filling absent columns with unknowns."""
    n = len(next(iter(columns.values()))) if columns else 0
    data: dict[str, Any] = {}
    for col in RESULT_COLUMNS:
        if col in columns:
            data[col] = columns[col]
        elif col in FLOAT_COLUMNS:
            data[col] = [float("nan")] * n
        elif col == "attempts":
            data[col] = [1] * n
        elif col == "flaky":
            data[col] = [False] * n
        else:
            data[col] = [None] * n
    frame = pd.DataFrame(data, columns=list(RESULT_COLUMNS))
    for col in FLOAT_COLUMNS:
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
    frame["attempts"] = frame["attempts"].astype("int64")
    frame["flaky"] = frame["flaky"].astype(bool)
    return frame
