"""Parser for laptime JSON reports (written by the laptime pytest plugin), schema version 1.

The schema lives in laptime_json_schema.py and docs/laptime-json.md. Validation is columnar:
one list per field, checked with one pass over its types, so a 100,000-test report costs a
few list comprehensions; the first offending value is then located for a precise message
(`tests[12].duration_s: expected number, got "abc"`).
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any, NoReturn

import numpy as np

from ingest.model import (
    MEASURE_COLUMNS,
    ParsedReport,
    ReportParseError,
    SessionInfo,
    results_frame,
)
from ingest.parsers.durations import split_nodeids
from ingest.parsers.executions import merge_reruns
from ingest.parsers.laptime_json_schema import (
    COLLECT_BY_FILE_MAX,
    FORMAT_NAME,
    INVOCATIONS,
    JOB_WALL_MAX_S,
    LENIENT_FIELDS,
    MALLOC_STATES,
    SCHEMA_VERSION,
    SESSION_FIELDS,
    TEST_FIELDS,
    TEST_REQUIRED,
)
from ingest.parsers.row_checks import durations_in_range, keep_named
from model.frames import OUTCOMES

__all__ = ["MESSAGE_MAX_CHARS", "parse_laptime_json"]

MESSAGE_MAX_CHARS = 4000
# Session strings with a closed vocabulary: anything else is unknown (lenient, with a warning).
_SESSION_CHOICES: dict[str, tuple[str, ...]] = {"invocation": INVOCATIONS, "malloc": MALLOC_STATES}
# Integers go into int64 columns; anything near the edge is nonsense, not a test count.
_INT_MAX = 2**31 - 1
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "timestamp": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "string-list": (list,),
    "string-map": (dict,),
    "number-map": (dict,),
}
_KIND_NAMES = {
    "string": "string",
    "timestamp": "ISO 8601 timestamp string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "string-list": "array of strings",
    "string-map": "object of strings",
    "number-map": "object of numbers",
}
# A path (rootdir, a collect_by_file key) longer than this is not a path.
PATH_MAX_CHARS = 4096


class _Invalid(Exception):
    """One field failed validation: the error text is `path: message`."""

    def __init__(self, path: str, message: str, *, code: str = "json-schema") -> None:
        super().__init__(f"{path}: {message}")
        self.code = code


def parse_laptime_json(data: bytes, *, filename: str | None = None) -> ParsedReport:
    """Parse and validate a laptime JSON report into a ParsedReport."""
    doc = _load(data, filename)
    try:
        return _report(doc)
    except _Invalid as exc:
        raise ReportParseError(exc.code, str(exc), filename=filename) from None


def _load(data: bytes, filename: str | None) -> Any:
    """Decode JSON bytes, turning every decoding failure into a json-malformed error."""

    def reject_constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not valid JSON")

    try:
        return json.loads(data, parse_constant=reject_constant)
    except json.JSONDecodeError as exc:
        raise ReportParseError(
            "json-malformed",
            f"not valid JSON: {exc.msg}",
            filename=filename,
            line=exc.lineno,
            column=exc.colno,
        ) from None
    except UnicodeDecodeError as exc:
        raise ReportParseError(
            "json-malformed",
            f"not valid JSON: bytes are not UTF-8 ({exc.reason})",
            filename=filename,
        ) from None
    except (ValueError, RecursionError) as exc:
        detail = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise ReportParseError(
            "json-malformed", f"not valid JSON: {detail}", filename=filename
        ) from None


def _report(doc: Any) -> ParsedReport:
    """Validate a decoded document and build the report."""
    if not isinstance(doc, dict):
        raise _Invalid("$", f"expected object, got {_describe(doc)}")
    if "format" not in doc:
        raise _Invalid("format", "required key missing")
    if doc["format"] != FORMAT_NAME:
        raise _Invalid("format", f'expected "{FORMAT_NAME}", got {_describe(doc["format"])}')
    if "version" not in doc:
        raise _Invalid("version", "required key missing")
    version = doc["version"]
    if type(version) is not int:
        raise _Invalid("version", f"expected integer, got {_describe(version)}")
    if version > SCHEMA_VERSION:
        raise _Invalid(
            "version",
            f"report version {version} is newer than this laptime understands "
            f"({SCHEMA_VERSION}); upgrade the laptime server",
            code="json-version",
        )
    if version < 1:
        raise _Invalid("version", f"expected {SCHEMA_VERSION}, got {version}")
    warnings: list[str] = []
    session = _session(doc.get("session"), warnings)
    if "tests" not in doc:
        raise _Invalid("tests", "required key missing")
    tests = doc["tests"]
    if not isinstance(tests, list):
        raise _Invalid("tests", f"expected array, got {_describe(tests)}")
    for index, test in enumerate(tests):
        if not isinstance(test, dict):
            raise _Invalid(f"tests[{index}]", f"expected object, got {_describe(test)}")
    columns = {
        key: _lenient_column(tests, key, kind, minimum, warnings)
        if key in LENIENT_FIELDS
        else _column(tests, key, kind, minimum)
        for key, (kind, minimum) in TEST_FIELDS.items()
    }
    return _build(columns, session, warnings)


def _session(raw: Any, warnings: list[str]) -> SessionInfo:
    """Validate the optional session object into SessionInfo (unknown keys are ignored);
    a bad value of a LENIENT_FIELDS key becomes null with a warning."""
    if raw is None:
        return SessionInfo()
    if not isinstance(raw, dict):
        raise _Invalid("session", f"expected object, got {_describe(raw)}")
    values: dict[str, Any] = {}
    for key, (kind, minimum) in SESSION_FIELDS.items():
        value = raw.get(key)
        problem = _session_problem(key, value, kind, minimum)
        if problem is not None:
            if key not in LENIENT_FIELDS:
                raise _Invalid(f"session.{key}", problem)
            warnings.append(f"session.{key}: {problem}; stored as unknown")
            value = None
        if kind == "number" and value is not None:
            value = float(value)
        elif kind == "number-map" and value is not None:
            value = {name: float(seconds) for name, seconds in value.items()}
        values[key] = value
    return SessionInfo(**values)


def _session_problem(key: str, value: Any, kind: str, minimum: float | None) -> str | None:
    """Why a session value is invalid, None when it is valid (or null)."""
    if value is None:
        return None
    if not _valid(value, kind, minimum):
        return _expected(value, kind, minimum)
    if key == "job_wall_s" and value > JOB_WALL_MAX_S:
        return f"expected at most a week ({JOB_WALL_MAX_S:g} s), got {value}"
    allowed = _SESSION_CHOICES.get(key)
    if allowed is not None and value not in allowed:
        return f"expected one of {', '.join(allowed)}, got {_describe(value)}"
    if key == "rootdir" and len(value) > PATH_MAX_CHARS:
        return f"expected at most {PATH_MAX_CHARS} characters, got {len(value)}"
    if kind == "number-map":
        if len(value) > COLLECT_BY_FILE_MAX:
            return f"expected at most {COLLECT_BY_FILE_MAX} entries, got {len(value)}"
        if any(len(name) > PATH_MAX_CHARS for name in value):
            return f"expected keys of at most {PATH_MAX_CHARS} characters"
    return None


def _lenient_column(
    tests: list[dict[str, Any]], key: str, kind: str, minimum: float | None, warnings: list[str]
) -> list[Any]:
    """One optional field of every test; invalid values become None with one warning."""
    values = [test.get(key) for test in tests]
    try:
        fine = _column_ok(values, kind, minimum) and set(map(type, values)) <= {
            *_PY_TYPES[kind],
            type(None),
        }
    except (TypeError, ValueError):  # a string or object among numbers: numpy refuses it
        fine = False
    if fine and not (kind in ("number", "integer") and bool in set(map(type, values))):
        return values
    bad = [
        index
        for index, value in enumerate(values)
        if value is not None and not _valid(value, kind, minimum)
    ]
    first = bad[0]
    warnings.append(
        f"tests[{first}].{key}: {_expected(values[first], kind, minimum)}; "
        f"{len(bad)} invalid {key} value(s) stored as unknown"
    )
    for index in bad:
        values[index] = None
    return values


def _column(tests: list[dict[str, Any]], key: str, kind: str, minimum: float | None) -> list[Any]:
    """One field of every test, validated; None where absent or null."""
    values = [test.get(key) for test in tests]
    required = key in TEST_REQUIRED
    allowed = set(_PY_TYPES[kind]) | (set() if required else {type(None)})
    seen = set(map(type, values))
    # bool is an int subclass: True is not a number, so a bool in a numeric column is an error.
    fast_ok = seen <= allowed and not (bool in seen and kind in ("number", "integer"))
    if fast_ok and kind in ("string", "boolean"):
        bad_outcome = key == "outcome" and not set(values) <= set(OUTCOMES)
        fast_ok = not bad_outcome and not (key == "nodeid" and "" in values)
    elif fast_ok:
        fast_ok = _column_ok(values, kind, minimum)
    if not fast_ok:
        _raise_first_error(tests, values, key, kind, minimum, required)
    return values


def _column_ok(values: list[Any], kind: str, minimum: float | None) -> bool:
    """Whether every non-null value of a column whose types are right is also valid."""
    if kind in ("number", "integer"):
        try:
            numbers = np.array(values, dtype=np.float64)  # None becomes NaN
        except OverflowError:
            return False  # an integer beyond float range
        known = numbers[~np.isnan(numbers)]
        if not np.isfinite(known).all():
            return False
        if minimum is not None and (known < minimum).any():
            return False
        return kind == "number" or not (known > _INT_MAX).any()
    if kind == "string-list":
        return all(type(item) is str for value in values if value for item in value)
    if kind == "string-map":
        return all(type(v) is str for value in values if value for v in value.values())
    return all(_valid(v, kind, minimum) for v in values if v is not None)


def _number_ok(value: Any, minimum: float | None) -> bool:
    """A finite number (not a bool) at or above `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and (minimum is None or value >= minimum)


def _raise_first_error(
    tests: list[dict[str, Any]],
    values: list[Any],
    key: str,
    kind: str,
    minimum: float | None,
    required: bool,
) -> NoReturn:
    """Find the first invalid value of a column (the slow path) and raise for it."""
    for index, value in enumerate(values):
        path = f"tests[{index}].{key}"
        if value is None:
            if required:
                missing = key not in tests[index]
            raise _Invalid(
                path,
                "required key missing" if missing else f"expected {_KIND_NAMES[kind]}, got null",
            )
            continue
        if not _valid(value, kind, minimum):
            raise _Invalid(path, _expected(value, kind, minimum))
        if key == "outcome" and value not in OUTCOMES:
            raise _Invalid(path, f"expected one of {', '.join(OUTCOMES)}, got {_describe(value)}")
        if key == "nodeid" and not value:
            raise _Invalid(path, "expected a non-empty string")
    raise AssertionError(f"column {key} failed its fast check but no value is invalid")


def _valid(value: Any, kind: str, minimum: float | None) -> bool:
    """Whether one non-null value has the field's kind and respects its minimum."""
    if kind in ("string", "timestamp"):
        if not isinstance(value, str):
            return False
        return kind == "string" or _is_timestamp(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string-list":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "string-map":
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if kind == "number-map":
        return isinstance(value, dict) and all(_number_ok(v, minimum) for v in value.values())
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if kind == "integer":
        if not isinstance(value, int) or value > _INT_MAX:
            return False
    elif not math.isfinite(value):
        return False
    return minimum is None or value >= minimum


def _is_timestamp(value: str) -> bool:
    """ISO 8601 as Python reads it (3.11 accepts the common forms, including a Z suffix)."""
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _expected(value: Any, kind: str, minimum: float | None) -> str:
    """The message for a value of the wrong kind or out of range."""
    wrong_type = not isinstance(value, _PY_TYPES[kind]) or (
        isinstance(value, bool) and kind in ("number", "integer")
    )
    if not wrong_type and kind in ("number", "integer"):
        if isinstance(value, float) and not math.isfinite(value):
            return f"expected a finite number, got {value}"
        if minimum is not None and value < minimum:
            return f"expected {kind} >= {minimum:g}, got {value}"
        return f"expected {kind} <= {_INT_MAX}, got {value}"
    if not wrong_type and kind == "timestamp":
        return f"expected {_KIND_NAMES[kind]}, got {_describe(value)}"
    if not wrong_type and kind == "string-list":
        bad = next(v for v in value if not isinstance(v, str))
        return f"expected {_KIND_NAMES[kind]}, got an item {_describe(bad)}"
    if not wrong_type and kind == "number-map":
        name, bad = next((k, v) for k, v in value.items() if not _number_ok(v, minimum))
        return f"expected {_KIND_NAMES[kind]} >= {minimum or 0:g}, got {name!r}: {_describe(bad)}"
    if not wrong_type and kind == "string-map":
        name, bad = next((k, v) for k, v in value.items() if not isinstance(v, str))
        return f"expected {_KIND_NAMES[kind]}, got {name!r}: {_describe(bad)}"
    return f"expected {_KIND_NAMES[kind]}, got {_describe(value)}"


def _describe(value: Any) -> str:
    """A short JSON rendering of a value for error messages."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + '..."'


def _build(
    columns: dict[str, list[Any]], session: SessionInfo, warnings: list[str]
) -> ParsedReport:
    """The results frame from validated columns, deriving what the report left out."""
    given = columns["nodeid"]
    columns = keep_named(columns, lambda row: f"tests[{row}] nodeid {given[row]!r}", warnings)
    for key in ("duration_s", "setup_s", "call_s", "teardown_s", "cpu_s", "gc_s", "cpu_wait_s"):
        seconds = np.array(columns[key], dtype=np.float64)
        columns[key] = durations_in_range(seconds, warnings, what=f"tests[].{key}").tolist()
    nodeids: list[str] = columns["nodeid"]
    parts = split_nodeids(nodeids)
    derived = {key: parts[key].tolist() for key in ("file", "classname", "function", "params")}
    for key, fallback in derived.items():
        given = columns[key]
        columns[key] = [g if g is not None else f for g, f in zip(given, fallback, strict=True)]
    phases = np.array(
        [columns[p] for p in ("setup_s", "call_s", "teardown_s")], dtype=np.float64
    ).reshape(3, len(nodeids))
    duration = np.array(columns["duration_s"], dtype=np.float64)
    # A report without duration_s still knows its phases: their sum is the test's time.
    known_phase = ~np.isnan(phases)
    phase_sum = np.where(known_phase.any(axis=0), np.nansum(phases, axis=0), np.nan)
    duration = np.where(np.isnan(duration), phase_sum, duration)
    attempts = np.array([a if a is not None else 1 for a in columns["attempts"]], dtype=np.int64)
    messages = [
        m[:MESSAGE_MAX_CHARS] if m is not None and len(m) > MESSAGE_MAX_CHARS else m
        for m in columns["message"]
    ]
    frame = results_frame(
        {
            "nodeid": nodeids,
            "file": columns["file"],
            "classname": columns["classname"],
            "function": columns["function"],
            "params": columns["params"],
            "param_values": columns["param_values"],
            "markers": columns["markers"],
            "outcome": columns["outcome"],
            "duration_s": duration,
            "setup_s": phases[0],
            "call_s": phases[1],
            "teardown_s": phases[2],
            "attempts": attempts,
            # The plugin sums every attempt into duration_s and keeps the last one's phases.
            "last_attempt_s": np.where(attempts > 1, phase_sum, np.nan),
            "flaky": [f is True for f in columns["flaky"]],
            "peak_rss_mib": np.array(columns["peak_rss_mib"], dtype=np.float64),
            **{key: np.array(columns[key], dtype=np.float64) for key in MEASURE_COLUMNS},
            "worker": columns["worker"],
            "suite": [None] * len(nodeids),
            "message": messages,
        }
    )
    if len(set(nodeids)) != len(nodeids):
        # A pytest nodeid is unique in a session: a repeated entry is another attempt.
        before = len(frame)
        merged = merge_reruns(
            {key: frame[key].to_numpy() for key in frame.columns},
            flaky_marks=np.zeros(before, dtype=bool),
        )
        frame = results_frame(merged)
        warnings.append(
            f"{before - len(frame)} repeated nodeid(s) in tests merged as rerun attempts: "
            "durations summed, the last entry's outcome and phases kept"
        )
    xfails = sum(1 for x in columns["xfail"] if x is True)
    properties = {"xfail_tests": str(xfails)} if xfails else {}
    return ParsedReport(
        format="laptime-json",
        results=frame,
        warnings=warnings,
        session=session,
        properties=properties,
    )
