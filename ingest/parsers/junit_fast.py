"""Bulk scanner for the JUnit parser: childless testcases read by one regex pass, not expat.

Most testcases of a large report are childless, `<testcase classname=".." name=".." .../>`,
all written with the same attribute layout. This module learns that layout from the first
childless testcase, and one compiled regex splits the whole document into those tags and
the text between them (C speed, no per-element Python). Every run of such tags separated
only by whitespace is replaced by one marker element, and expat parses what is left (the
suites, properties, testcases with children and any tag in another layout) with the very
handlers of the full parser, so the structure, the outcomes and every rule stay its own.
The markers then expand into the columns the regex captured.

Why the result is the full parser's, exactly:
- a removed tag is well-formed by construction (literal names, quoted values without `<`,
  no control characters); values holding `&` or XML whitespace are decoded by expat itself;
- any marker expat does not see as a testcase at depth 0 (inside a comment, CDATA, a
  testcase) means the scan misread the document: the fast path declines;
- expat refusing the rest (a DTD, an entity, malformed XML, a foreign root) also declines;
  the caller then runs the full parser on the original bytes, which reports the error with
  its exact position. Only UTF-8 input (after the UTF-16 conversion) is scanned.
"""

from __future__ import annotations

import re
from itertools import compress
from typing import TypeVar
from xml.parsers import expat

import numpy as np

from ingest.parsers.junit import _ENCODING_DECL, _Columns, _Forbidden, _make_parser

_V = TypeVar("_V")
MARKER_ATTRIBUTE = "laptime-run"
# The testcase attributes junit._build_report reads; the scan skips the others' values.
USED_ATTRIBUTES = frozenset(
    {"name", "time", "duration", "classname", "class", "file", "result", "status"}
)
# Under this many childless testcases expat alone is as fast: not worth a second pass.
MIN_BULK_CASES = 64
_NAME = r"[A-Za-z_][A-Za-z0-9_.:-]*"
_FIRST_CHILDLESS = re.compile(
    r"<testcase((?:[ \t\r\n]+" + _NAME + r"""[ \t\r\n]*=[ \t\r\n]*(?:"[^"<]*"|'[^'<]*'))+)"""
    r"[ \t\r\n]*/>"
)
_ATTRIBUTE = re.compile(r"([ \t\r\n]+)(" + _NAME + r""")([ \t\r\n]*=[ \t\r\n]*)(["'])""")


class _BulkColumns(_Columns):
    """`_Columns` whose testcases are residual rows (parsed by expat) and scanned runs."""

    def __init__(self) -> None:
        super().__init__()
        self.scanned: dict[str, list[str]] = {}
        self.scanned_rows = 0
        # Residual rows that are real testcases (not markers), and for every document row
        # its index into "scanned values, then real testcases' values".
        self.real_rows: list[int] = []
        self.order: list[int] = []

    def column(self, key: str) -> list[str | None]:
        """One attribute of every testcase in document order, None where absent."""
        known = self.scanned.get(key)
        if not self.real_rows:
            return list(known) if known is not None else [None] * self.scanned_rows
        if known is None and not any(key in self.cases[row] for row in self.real_rows):
            return [None] * self.count
        scanned: list[str | None] = [None] * self.scanned_rows if known is None else known  # type: ignore[assignment]
        # Scanned values first, then the real testcases': `order` puts them in document order.
        pool = scanned + [self.cases[row].get(key) for row in self.real_rows]
        return list(map(pool.__getitem__, self.order))


def collect_fast(
    text: bytes, encoding: str | None, *, min_cases: int = MIN_BULK_CASES
) -> _Columns | None:
    """The parser's columns for a document in the common shape, or None to use expat alone.

    `text` and `encoding` are what `junit._prepare` returns; under `min_cases` childless
    testcases the scan is not worth it and None is returned.
    """
    if encoding is None:
        declared = _ENCODING_DECL.match(text)
        if declared is not None and declared.group(1).lower() not in (b"utf-8", b"utf8"):
            return None
    try:
        document = text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # U+FFFE/U+FFFF are not XML characters; the value pattern below does not exclude them.
    if MARKER_ATTRIBUTE in document or "\ufffe" in document or "\uffff" in document:
        return None
    layout = _layout(document)
    if layout is None:
        return None
    pattern, keys = layout
    parts = pattern.split(document)
    width = len(keys) + 2  # the text before a tag, its values, the whitespace after it
    tags = len(parts) // width
    if tags < min_cases:
        return None
    scanned = {key: parts[index + 1 :: width] for index, key in enumerate(keys)}
    between = parts[0::width]
    # A run starts at every tag preceded by something other than whitespace.
    starts = [0, *compress(range(1, tags), between[1:tags])]
    pieces: list[str] = []
    for run, start in enumerate(starts):
        pieces.append(between[start])
        pieces.append(f'<testcase {MARKER_ATTRIBUTE}="{run}"/>')
    pieces.append(between[tags])
    cols = _BulkColumns()
    parser = _make_parser(cols, "utf-8")
    try:
        parser.Parse("".join(pieces).encode("utf-8"), True)
    except (expat.ExpatError, _Forbidden):
        return None
    return _expand(cols, starts, tags, scanned)


def _layout(document: str) -> tuple[re.Pattern[str], list[str]] | None:
    """(regex, names of the captured attributes) for the first childless testcase's layout.

    Values may not hold `&`, `<` or control characters (tab and newlines included): a tag
    with one does not match, stays in the residual document, and expat decodes (or refuses)
    it. So every tag the regex removes is well-formed and its values are expat's.
    """
    first = _FIRST_CHILDLESS.search(document)
    if first is None:
        return None
    pattern = ["<testcase"]
    keys: list[str] = []
    names: list[str] = []
    for sep, key, equals, quote in _ATTRIBUTE.findall(first.group(1)):
        names.append(key)
        # Possessive repeats: a value ends at its quote, there is nothing to backtrack into.
        value = f"[^{quote}&<\x00-\x1f]*+"
        if key in USED_ATTRIBUTES:
            value = f"({value})"
            keys.append(key)
        pattern.append(re.escape(sep + key + equals + quote) + value + quote)
    if len(set(names)) != len(names):
        return None
    pattern.append("[ \t\r\n]*+/>([ \t\r\n]*+)")
    return re.compile("".join(pattern)), keys


def _expand(
    cols: _BulkColumns, starts: list[int], tags: int, scanned: dict[str, list[str]]
) -> _Columns | None:
    """Map residual rows to document rows; None unless every marker came back in order."""
    runs = [attrs.get(MARKER_ATTRIBUTE) for attrs in cols.cases]
    marker_rows = [row for row, run in enumerate(runs) if run is not None]
    if [runs[row] for row in marker_rows] != [str(run) for run in range(len(starts))]:
        return None
    residual = len(runs)
    is_marker = np.zeros(residual, dtype=bool)
    is_marker[marker_rows] = True
    run_starts = np.array(starts, dtype=np.int64)
    sizes = np.ones(residual, dtype=np.int64)
    sizes[is_marker] = np.diff(np.append(run_starts, tags))
    # Where each residual row's values begin in the pool (scanned values, then real rows).
    base = np.empty(residual, dtype=np.int64)
    base[is_marker] = run_starts
    base[~is_marker] = tags + np.arange(residual - len(marker_rows))
    first_rows = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    owner = np.repeat(np.arange(residual), sizes)
    cols.order = (base[owner] + (np.arange(len(owner)) - first_rows[owner])).tolist()
    cols.scanned = scanned
    cols.scanned_rows = tags
    cols.real_rows = np.flatnonzero(~is_marker).tolist()
    cols.case_suites = np.array(cols.case_suites, dtype=np.int64)[owner].tolist()
    first = first_rows.tolist()
    cols.outcomes = _moved(cols.outcomes, first)
    cols.messages = _moved(cols.messages, first)
    cols.reruns = _moved(cols.reruns, first)
    cols.flaky_runs = _moved(cols.flaky_runs, first)
    return cols


def _moved(sparse: dict[int, _V], first_rows: list[int]) -> dict[int, _V]:
    """A residual-row-keyed dict re-keyed by document row."""
    return {first_rows[row]: value for row, value in sparse.items()}
