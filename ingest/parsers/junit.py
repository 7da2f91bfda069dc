"""JUnit XML (every common dialect) -> ParsedReport, with stdlib expat and no DTD at all.

Speed matters (reports of 200k testcases): expat callbacks append to plain lists, one per
column, and the results frame is built once from them. Identity (nodeid, file, function,
params) is derived per distinct classname, not per row; repeated testcases are handled in
a vectorised pass that runs only when duplicates exist (see executions.py).

Dialect rules (see docs/errors.md for the error codes):
- roots `<testsuites>` or `<testsuite>`, suites nested to any depth; `suite` is the innermost;
- outcome: `<error>` > `<failure>` > skipped (`<skipped>`, `<skip>`, `<ignored>`, `<disabled>`,
  or a `status`/`result` attribute such as disabled/notrun/skipped) > passed;
- Surefire `<flakyFailure>`/`<flakyError>`: extra failed attempts of a test that then passed
  (flaky); `<rerunFailure>`/`<rerunError>`: extra failed attempts of a test that failed;
- repeated testcases with the same identity are reruns only in pytest reports (one result,
  durations summed, the LAST attempt's outcome, `attempts` the count, `flaky` when it failed
  before a final pass); in any other dialect each is its own execution, nodeid " #k";
- Surefire's rerun children are attempts inside one testcase, whose `time` is kept as written;
- `time` (or `duration`): empty/missing is unknown; "1,234.5" and "0,5" are understood;
  negative or unparseable values become NaN with a warning. When every time is an integer
  and one is above 1e6 s (11.6 days, not a plausible test), the report is in nanoseconds
  (container-structure-test): times are divided by 1e9, with a warning.
"""

from __future__ import annotations

import codecs
import gc
import operator
import re
from itertools import repeat
from typing import Any
from xml.parsers import expat

import numpy as np
import pandas as pd

from ingest.model import FLOAT_COLUMNS, ParsedReport, ReportParseError, SessionInfo
from ingest.parsers.detect import sniff_xml, utf16_as_utf8
from ingest.parsers.executions import merge_reruns, number_executions
from ingest.parsers.junit_expat import (
    ENCODING_DECL,
    Columns,
    Forbidden,
    make_parser,
)
from ingest.parsers.junit_fast import collect_fast
from ingest.parsers.junit_times import durations_s, wall_s
from ingest.parsers.nodeid import pytest_nodeid, split_pytest_classname
from ingest.parsers.row_checks import keep_named
from model.frames import RESULT_COLUMNS

_STATUS_OUTCOME = {
    "disabled": "skipped",
    "notrun": "skipped",
    "skipped": "skipped",
    "skip": "skipped",
    "ignored": "skipped",
    "suppressed": "skipped",
    "pending": "skipped",
    "failed": "failed",
    "failure": "failed",
    "errored": "error",
    "error": "error",
}
_UNDEFINED_ENTITY = expat.errors.codes[expat.errors.XML_ERROR_UNDEFINED_ENTITY]
_INVALID_TOKEN = expat.errors.codes[expat.errors.XML_ERROR_INVALID_TOKEN]


def parse_junit(data: bytes, *, filename: str | None = None, fast: bool = True) -> ParsedReport:
    """Parse JUnit XML bytes into a ParsedReport; hostile or non-JUnit input raises.

    `fast=False` skips the bulk scanner (junit_fast) and runs expat over every element.
    """
    text, encoding, line_offset = prepare_xml(data, filename)
    # Hundreds of thousands of attribute dicts are kept alive while parsing; the cyclic
    # collector would rescan them over and over (quadratic) and they form no cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        # The fast path declines (None) anything unusual, including every invalid document:
        # expat then parses the original and reports the error with its exact position.
        cols = collect_fast(text, encoding) if fast else None
        if cols is None:
            cols = Columns()
            _parse_into(cols, text, encoding, line_offset, filename)
        return _build_report(cols)
    finally:
        if gc_was_enabled:
            gc.enable()


def _parse_into(
    cols: Columns, text: bytes, encoding: str | None, line_offset: int, filename: str | None
) -> None:
    """Run expat over the whole document, mapping every failure to a ReportParseError."""
    run_expat(make_parser(cols, encoding), text, encoding, line_offset, filename)


def run_expat(
    parser: Any, text: bytes, encoding: str | None, line_offset: int, filename: str | None
) -> None:
    """Feed `text` to a hardened expat `parser`, mapping every failure (malformed, truncated,
    forbidden DTD/entity, foreign root) to a ReportParseError with the file's position."""
    try:
        try:
            parser.Parse(text, False)
        except expat.ExpatError as exc:
            raise _xml_error(exc, text, encoding, line_offset, filename, at_end=False) from None
        try:
            parser.Parse(b"", True)
        except expat.ExpatError as exc:
            raise _xml_error(exc, text, encoding, line_offset, filename, at_end=True) from None
    except Forbidden as exc:
        line, column = parser.CurrentLineNumber, parser.CurrentColumnNumber + 1
        if exc.code == "xml-dtd-forbidden":
            # expat reports the DOCTYPE after reading its name; point at its "<!" instead.
            start = text.rfind(b"<!DOCTYPE", 0, parser.CurrentByteIndex + 1)
            if start >= 0:
                line = text.count(b"\n", 0, start) + 1
                column = start - text.rfind(b"\n", 0, start)
        raise ReportParseError(
            exc.code, exc.message, filename=filename, line=line + line_offset, column=column
        ) from None


def prepare_xml(data: bytes, filename: str | None) -> tuple[bytes, str | None, int]:
    """Normalise the start of the document: UTF-16 to UTF-8, BOM and leading blanks dropped.

    Returns the bytes to parse, the encoding to force on expat (None = as declared) and
    how many lines were dropped, so error positions still point into the original file.
    """
    encoding: str | None = None
    if sniff_xml(data[:4]) == "utf-16":
        # expat is told UTF-8, overriding the document's own "UTF-16" declaration.
        data = utf16_as_utf8(data, filename)
        encoding = "utf-8"
    elif data.startswith(codecs.BOM_UTF8):
        data = data[3:]
    stripped = data.lstrip(b" \t\r\n")
    line_offset = data.count(b"\n", 0, len(data) - len(stripped))
    return stripped, encoding, line_offset


def _xml_error(
    exc: expat.ExpatError,
    text: bytes,
    encoding: str | None,
    line_offset: int,
    filename: str | None,
    *,
    at_end: bool,
) -> ReportParseError:
    """Turn an expat error into a coded ReportParseError with the file's line and column."""
    reason = expat.ErrorString(exc.code)
    line = exc.lineno + line_offset
    column = exc.offset + 1
    if exc.code == _INVALID_TOKEN or "encoding" in reason:
        bad = _encoding_error(text, encoding)
        if bad is not None:
            bad_line, bad_column, detail = bad
            return ReportParseError(
                "encoding-invalid",
                detail,
                filename=filename,
                line=bad_line + line_offset,
                column=bad_column,
            )
    if exc.code == _UNDEFINED_ENTITY:
        return ReportParseError(
            "xml-entity-forbidden",
            "reference to an undeclared entity; only the five predefined XML entities "
            "and character references are allowed",
            filename=filename,
            line=line,
            column=column,
        )
    if at_end:
        return ReportParseError(
            "xml-truncated",
            f"the XML ends before the document is complete ({reason})",
            filename=filename,
            line=line,
            column=column,
        )
    return ReportParseError(
        "xml-malformed",
        f"XML is not well-formed: {reason}",
        filename=filename,
        line=line,
        column=column,
    )


def _encoding_error(text: bytes, forced: str | None) -> tuple[int, int, str] | None:
    """(line, column, message) of the first byte invalid in the declared encoding, if any."""
    declared = forced
    if declared is None:
        match = ENCODING_DECL.match(text)
        declared = match.group(1).decode("ascii") if match else "utf-8"
    try:
        codecs.lookup(declared)
    except LookupError:
        return 1, 1, f"unknown encoding {declared!r} in the XML declaration"
    try:
        text.decode(declared)
    except UnicodeDecodeError as exc:
        line = text.count(b"\n", 0, exc.start) + 1
        column = exc.start - (text.rfind(b"\n", 0, exc.start) + 1) + 1
        return line, column, f"byte 0x{text[exc.start]:02x} is not valid {declared}: {exc.reason}"
    return None


def _fill(values: list[str | None], cols: Columns, key: str) -> None:
    """Fill the gaps of `values` from a second attribute name (`class`, `duration`)."""
    gaps = [i for i, v in enumerate(values) if not v]
    other = cols.column(key)
    for row in gaps:
        values[row] = other[row] or values[row]


def _build_report(cols: Columns) -> ParsedReport:
    """Turn the collected testcases into the results frame, collapsing reruns."""
    warnings: list[str] = []
    n = cols.count
    names = cols.column("name")
    if None in names:
        names = [name or "" for name in names]
    times = cols.column("time")
    if not all(times):
        _fill(times, cols, "duration")
    durations = durations_s(times, warnings)
    nodeids, files, classnames, functions, params, suite_names, pytest_rows = _identities(
        cols,
        names,  # type: ignore[arg-type]
    )
    outcomes = _filled(n, "passed")
    for key in ("result", "status"):
        statuses = cols.column(key)
        if any(statuses):
            for row, status in enumerate(statuses):
                if status:
                    outcomes[row] = _STATUS_OUTCOME.get(status.lower(), outcomes[row])
    for row, outcome in cols.outcomes.items():
        outcomes[row] = outcome
    messages = _filled(n, None)
    for row, message in cols.messages.items():
        messages[row] = message
    attempts = np.ones(n, dtype=np.int64)
    flaky = np.zeros(n, dtype=bool)
    flaky_marks = np.zeros(n, dtype=bool)
    for row, count in cols.reruns.items():
        attempts[row] += count
    for row, count in cols.flaky_runs.items():
        attempts[row] += count
        flaky_marks[row] = True
        flaky[row] = outcomes[row] == "passed"
    columns: dict[str, Any] = {
        "nodeid": nodeids,
        "file": files,
        "classname": classnames,
        "function": functions,
        "params": params,
        "outcome": outcomes,
        "duration_s": durations,
        "attempts": attempts,
        "flaky": flaky,
        "suite": suite_names,
        "message": messages,
    }
    columns = keep_named(
        {**columns, "_pytest": pytest_rows, "_flaky_marks": flaky_marks},
        lambda row: f'testcase {row + 1} (time="{times[row] or ""}")',
        warnings,
        # A testcase with no name attribute leaves its nodeid the class prefix alone.
        prefix_only=True,
    )
    pytest_rows, flaky_marks = columns.pop("_pytest"), columns.pop("_flaky_marks")
    n = len(columns["nodeid"])
    if n and len(set(columns["nodeid"].tolist())) != n:
        columns = _executions(columns, pytest_rows, flaky_marks, warnings)
    session = SessionInfo(
        started_at=cols.timestamp or None,
        hostname=cols.hostname or None,
        wall_s=wall_s(cols.root_time),
    )
    return ParsedReport(
        format="junit",
        results=_frame(columns),
        warnings=warnings,
        session=session,
        properties=dict(cols.properties),
    )


def _executions(
    columns: dict[str, Any],
    pytest_rows: np.ndarray[Any, np.dtype[np.bool_]],
    flaky_marks: np.ndarray[Any, np.dtype[np.bool_]],
    warnings: list[str],
) -> dict[str, Any]:
    """Repeated nodeids: pytest's are attempts of one test (merged), others' are executions."""
    renamed = number_executions(columns["nodeid"], pytest_rows)
    if renamed:
        warnings.append(
            f"{renamed} testcase(s) repeat the name of an earlier one: kept as separate "
            "executions, their nodeids suffixed ' #2', ' #3'... in document order"
        )
    before = len(columns["nodeid"])
    if len(set(columns["nodeid"].tolist())) != before:
        columns = merge_reruns(columns, flaky_marks=flaky_marks)
        warnings.append(
            f"{before - len(columns['nodeid'])} repeated pytest testcase(s) merged into their "
            "test as rerun attempts (a pytest nodeid is unique in a session); times summed"
        )
    return columns


_ObjectArray = np.ndarray[Any, np.dtype[np.object_]]


def _identities(
    cols: Columns, names: list[str]
) -> tuple[
    _ObjectArray,
    _ObjectArray,
    _ObjectArray,
    _ObjectArray,
    _ObjectArray,
    _ObjectArray,
    np.ndarray[Any, np.dtype[np.bool_]],
]:
    """(nodeid, file, classname, function, params, suite, is-pytest) arrays, one identity
    computation per distinct (classname, file, suite) rather than per row."""
    n = cols.count
    classname_column = cols.column("classname")
    if not all(classname_column):
        _fill(classname_column, cols, "class")
    file_column = cols.column("file")
    # One integer per (classname, file, suite), kept small by factorising at each step.
    pair_codes, pairs = pd.factorize(
        _first_rows(classname_column) * (n + 1) + _first_rows(file_column)
    )
    combined, keys = pd.factorize(
        pair_codes.astype(np.int64) * len(cols.suites) + np.array(cols.case_suites, dtype=np.int64)
    )
    key_pairs = pairs[keys // len(cols.suites)]
    # Playwright writes one suite per browser project with the project as `hostname`; a
    # report whose suites name several hosts keeps them apart. A single host is a machine
    # name and stays out of the identity, which must not change from one CI runner to another.
    several_hosts = len({s[3] for s in cols.suites[1:]}) > 1
    identities = []
    pytest_flags = []
    suite_names = []
    for class_row, file_row, suite in zip(
        (key_pairs // (n + 1)).tolist(),
        (key_pairs % (n + 1)).tolist(),
        (keys % len(cols.suites)).tolist(),
        strict=True,
    ):
        suite_name, suite_file, suite_pytest, host = cols.suites[suite]
        file = file_column[file_row] or suite_file
        pytest_like = suite_pytest or (file is not None and file.endswith(".py"))
        identities.append(
            _prefix(
                classname_column[class_row] or "",
                file,
                suite_name,
                pytest_like,
                host if several_hosts else None,
            )
        )
        pytest_flags.append(pytest_like)
        suite_names.append(suite_name)
    prefixes, file_out, class_out = (
        _objects([identity[part] for identity in identities]) for part in range(3)
    )
    suite_out = _objects(suite_names)
    is_pytest = np.array(pytest_flags, dtype=bool)
    names_array = _objects(names)
    nodeids = prefixes[combined] + names_array
    # Bracketed ids are pytest's parametrize ids; other tools' brackets are just text.
    # "f[p]" splits at its first "[" when it ends with "]" and "f" is not empty.
    split = cols.split_names()
    if split is None:
        functions, params = _split_names(names, names_array, is_pytest[combined])
    else:
        functions, params = _objects(split[0]), _objects(split[1])
        unsplit = pd.isna(params) | ~is_pytest[combined]
        functions[unsplit] = names_array[unsplit]
        params[unsplit] = None
    return (
        nodeids,
        file_out[combined],
        class_out[combined],
        functions,
        params,
        suite_out[combined],
        is_pytest[combined],
    )


def _split_names(
    names: list[str], names_array: _ObjectArray, is_pytest: np.ndarray[Any, np.dtype[np.bool_]]
) -> tuple[_ObjectArray, _ObjectArray]:
    """(function, params) per row: pytest rows' "f[p]" split, the name and None otherwise."""
    n = len(names)
    functions = names_array.copy()
    params = _filled(n, None)
    bracket_at = np.fromiter(map(str.find, names, repeat("[")), dtype=np.int64, count=n)
    candidates = np.flatnonzero((bracket_at > 0) & is_pytest)
    if candidates.size:
        candidate_names = names_array[candidates].tolist()
        closed = np.fromiter(
            map(str.endswith, candidate_names, repeat("]")), dtype=bool, count=len(candidates)
        )
        rows = candidates[closed]
        split_names = names_array[rows].tolist()
        at = bracket_at[rows].tolist()
        functions[rows] = _objects(list(map(str.__getitem__, split_names, map(slice, at))))
        params[rows] = _objects(
            list(
                map(
                    str.__getitem__,
                    split_names,
                    map(slice, map(operator.add, at, repeat(1)), repeat(-1)),
                )
            )
        )
    return functions, params


def _first_rows(values: list[str | None]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Per row, the first row holding its value (None a value like any other).

    A factorisation in one pass that hashes each row once in C: the columns repeat a few
    values many times, and pandas' object factorize with its type inference costs more.
    """
    first: dict[str | None, int] = {}
    return np.fromiter(
        map(first.setdefault, values, range(len(values))), dtype=np.int64, count=len(values)
    )


def _filled(n: int, value: object) -> _ObjectArray:
    """An object array of one value (np.full converts item by item for object dtype)."""
    values = np.empty(n, dtype=object)
    values.fill(value)
    return values


def _objects(values: list[Any]) -> _ObjectArray:
    """An object array of a list, built without numpy's per-item type inference."""
    return np.fromiter(values, dtype=object, count=len(values))


def _prefix(
    classname: str, file: str | None, suite: str | None, is_pytest: bool, host: str | None
) -> tuple[str, str | None, str | None]:
    """(nodeid prefix, file, classname) for one distinct (classname, file, suite, dialect).

    pytest rows get the class part only ("TestC::TestInner"), as the other parsers give;
    other dialects keep the classname they wrote.
    """
    if is_pytest:
        path, classes = split_pytest_classname(classname, file)
        prefix = pytest_nodeid(path, classes, "")
        return prefix, path or None, classes or None
    # "suite::classname::" with empty parts and a classname repeating the suite left out.
    parts = [p for p in (host, suite, classname if classname != suite else None) if p]
    if file is None:
        # Jest, Vitest and Mocha name the suite (or classname) after the test file.
        file = next((p for p in (suite, classname) if p and _SOURCE_PATH.match(p)), None)
    return "".join(p + "::" for p in parts), file, classname or None


# A relative or absolute path ending in a source-file extension, without spaces.
_SOURCE_PATH = re.compile(
    r"^[\w./@+-]*[\w-]\.(?:[cm]?[jt]sx?|py|rb|go|php|java|kt|scala|rs|cs|swift|ex|exs)$"
)


def _frame(columns: dict[str, Any]) -> pd.DataFrame:
    """The results frame in RESULT_COLUMNS order, built once with the contract's dtypes."""
    n = len(columns["nodeid"])
    index = pd.RangeIndex(n)  # one index object for all: the frame has none to align
    nan = np.full(n, np.nan)
    none = _filled(n, None)
    series: dict[str, pd.Series[Any]] = {}
    for col in RESULT_COLUMNS:
        if col in ("nodeid", "outcome"):
            series[col] = pd.Series(columns[col], index=index, dtype="str", copy=False)
        elif col in columns:
            values = columns[col]
            dtype: Any = values.dtype if values.dtype != object else object
            series[col] = pd.Series(values, index=index, dtype=dtype, copy=False)
        elif col in FLOAT_COLUMNS:  # NaN, not None: one float dtype whatever the parser
            series[col] = pd.Series(nan, index=index, copy=True)
        else:
            series[col] = pd.Series(none, index=index, dtype=object, copy=True)
    return pd.DataFrame(series, index=index, copy=False)
