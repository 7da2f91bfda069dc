"""Bulk scanner for the JUnit parser: childless testcases read by one regex pass, not expat.

Most testcases of a large report are childless, `<testcase classname=".." name=".." .../>`,
all written with the same attribute layout. This module learns that layout from the first
childless testcase, and one compiled regex splits the whole document into those tags and
the text between them (C speed, no per-element Python). The same regex also takes a
testcase of that layout whose only child is an outcome (`<failure message="..">text
</failure>`, `<skipped/>`...) and splits pytest names "f[p]" into function and params.
Every run of such tags separated only by whitespace is replaced by one marker element, and
expat parses what is left (the suites, properties, other testcases with children and any
tag in another layout) with the very handlers of the full parser, so the structure and
every rule stay its own. The markers then expand into the columns the regex captured; the
outcome children follow `_case_child`'s rules.

Why the result is the full parser's, exactly:
- a removed tag is well-formed by construction (literal names, quoted values without `<`,
  no control characters, an end tag matching its child); values and text holding `&`, a
  carriage return or XML whitespace in attributes are left to expat, which decodes them;
  a repeated child attribute or "]]>" in a child's text declines;
- any marker expat does not see as a testcase at depth 0 (inside a comment, CDATA, a
  testcase) means the scan misread the document: the fast path declines;
- expat refusing the rest (a DTD, an entity, malformed XML, a foreign root) also declines;
  the caller then runs the full parser on the original bytes, which reports the error with
  its exact position. Only UTF-8 input (after the UTF-16 conversion) is scanned.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import compress
from typing import TypeVar
from xml.parsers import expat

import numpy as np

from ingest.parsers.junit_expat import (
    CHILD_OUTCOME,
    ENCODING_DECL,
    MAX_MESSAGE_CHARS,
    Columns,
    Forbidden,
    make_parser,
)
from ingest.parsers.nodeid import split_params

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
    r"[ \t\r\n]*(?:/>|>[ \t\r\n]*</testcase[ \t\r\n]*>)"
)
_ATTRIBUTE = re.compile(r"([ \t\r\n]+)(" + _NAME + r""")([ \t\r\n]*=[ \t\r\n]*)(["'])""")
# Groups of the name's "f[p]" split, after the name's own group.
_FUNCTION = " function"
_PARAMS = " params"
# The end of a scanned testcase: `/>`, an end tag with only whitespace before it (Go's and
# Jest's reporters), or one outcome child (failure, skipped...) with
# attributes and text that need no decoding, then the whitespace after the testcase.
# Text may hold tab and newlines (expat keeps them) but no carriage return (normalised).
_WS = "[ \t\r\n]"
_VALUE = "(?:\"[^\"<&\x00-\x1f]*+\"|'[^'<&\x00-\x1f]*+')"
_END = (
    f"{_WS}*+(?:/>|>{_WS}*+</testcase{_WS}*+>|>{_WS}*+<(?P<child>{{children}})((?:{_WS}+{{name}}{_WS}*={_WS}*+{_VALUE})*+)"
    f"{_WS}*+(?:/>|>([^<&\r\x00-\x08\x0b\x0c\x0e-\x1f]*+)</(?P=child){_WS}*+>)"
    f"{_WS}*+</testcase{_WS}*+>)({_WS}*+)"
)
_CHILD_ATTRIBUTE = re.compile(
    _WS + "+(" + _NAME + ")" + _WS + "*=" + _WS + "*([\"'])(.*?)\\2", re.DOTALL
)
_CHILD = " child"
_CHILD_ATTRIBUTES = " child attributes"
_TEXT = " text"


class _BulkColumns(Columns):
    """`Columns` whose testcases are residual rows (parsed by expat) and scanned runs."""

    def __init__(self) -> None:
        super().__init__()
        self.scanned: dict[str, list[str | None]] = {}
        self.scanned_rows = 0
        # The scan's own "f[p]" split of each scanned name (None, None when it has none).
        self.scanned_functions: list[str | None] = []
        self.scanned_params: list[str | None] = []
        # Residual rows that are real testcases (not markers), and the document as pieces:
        # (start, end) of a run of scanned rows, or _REAL for the next real testcase.
        self.real_rows: list[int] = []
        self.pieces: list[tuple[int, int]] = []

    def column(self, key: str) -> list[str | None]:
        """One attribute of every testcase in document order, None where absent."""
        known = self.scanned.get(key)
        if not self.real_rows:
            return list(known) if known is not None else [None] * self.scanned_rows
        if known is None and not any(key in self.cases[row] for row in self.real_rows):
            return [None] * self.count
        return self._interleave(
            [None] * self.scanned_rows if known is None else known,
            [self.cases[row].get(key) for row in self.real_rows],
        )

    def split_names(self) -> tuple[list[str | None], list[str | None]]:
        """(function, params) of every testcase named "f[p]", (None, None) for the others."""
        functions: list[str | None] = []
        params: list[str | None] = []
        for row in self.real_rows:
            function, param = split_params(self.cases[row].get("name") or "")
            functions.append(None if param is None else function)
            params.append(param)
        return (
            self._interleave(self.scanned_functions, functions),
            self._interleave(self.scanned_params, params),
        )

    def _interleave(self, scanned: Sequence[_V], real: list[_V]) -> list[_V]:
        """Scanned values and real testcases' values merged into document order."""
        out: list[_V] = []
        extend = out.extend
        append = out.append
        real_values = iter(real)
        for start, end in self.pieces:
            if start < 0:
                append(next(real_values))
            else:
                extend(scanned[start:end])
        return out


_REAL = (-1, -1)


def collect_fast(
    text: bytes, encoding: str | None, *, min_cases: int = MIN_BULK_CASES
) -> Columns | None:
    """The parser's columns for a document in the common shape, or None to use expat alone.

    `text` and `encoding` are what `junit.prepare_xml` returns; under `min_cases` childless
    testcases the scan is not worth it and None is returned.
    """
    if encoding is None:
        declared = ENCODING_DECL.match(text)
        if declared is not None and declared.group(1).lower() not in (b"utf-8", b"utf8"):
            return None
    try:
        document = text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # U+FFFE/U+FFFF are not XML characters; the value pattern below does not exclude them.
    if "\ufffe" in document or "\uffff" in document:
        return None
    layout = _layout(document)
    if layout is None:
        return None
    tags, between, values = _scan(document, *layout)
    if tags < min_cases:
        return None
    # A run starts at every tag preceded by something other than whitespace.
    starts = [0, *compress(range(1, tags), between[1:tags])]
    pieces: list[str] = []
    for run, start in enumerate(starts):
        pieces.append(between[start])
        pieces.append(f'<testcase {MARKER_ATTRIBUTE}="{run}"/>')
    pieces.append(between[tags])
    residual = "".join(pieces)
    # Only the residual document reaches expat: our marker attribute must be ours alone.
    if residual.count(MARKER_ATTRIBUTE) != len(starts):
        return None
    cols = _BulkColumns()
    parser = make_parser(cols, "utf-8")
    try:
        parser.Parse(residual.encode("utf-8"), True)
    except (expat.ExpatError, Forbidden):
        return None
    children = _children(values.pop(_CHILD), values.pop(_CHILD_ATTRIBUTES), values.pop(_TEXT))
    if children is None or not _expand(cols, starts, tags, *children):
        return None
    cols.scanned_functions = values.pop(_FUNCTION, [None] * tags)
    cols.scanned_params = values.pop(_PARAMS, [None] * tags)
    cols.scanned = values
    cols.scanned_rows = tags
    return cols


def _scan(
    document: str, pattern: re.Pattern[str], groups: list[str]
) -> tuple[int, list[str], dict[str, list[str | None]]]:
    """(tags removed, text before each and after the last, captured values by group)."""
    width = len(groups) + 2  # the text before a tag, its groups, the whitespace after it
    parts = pattern.split(document)
    values = {group: parts[index + 1 :: width] for index, group in enumerate(groups)}
    return len(parts) // width, parts[0::width], values


def _layout(document: str) -> tuple[re.Pattern[str], list[str]] | None:
    """(regex, its groups) for the first childless testcase's layout.

    Values may not hold `&`, `<` or control characters (tab and newlines included): a tag
    with one does not match, stays in the residual document, and expat decodes (or refuses)
    it. So every tag the regex removes is well-formed and its values are expat's. The name
    is also captured as pytest's function and params, so that no row is split in Python.
    """
    first = _FIRST_CHILDLESS.search(document)
    if first is None:
        return None
    pattern = ["<testcase"]
    groups: list[str] = []
    names: list[str] = []
    for sep, key, equals, quote in _ATTRIBUTE.findall(first.group(1)):
        names.append(key)
        # Possessive repeats: a value ends at its quote, there is nothing to backtrack into.
        chars = f"{quote}&<\x00-\x1f"
        value = f"[^{chars}]*+"
        if key == "name":
            # "f[p]" (f up to the first "[", p up to the "]" ending the value) also gives f
            # and p, as split_params does; any other name gives None twice.
            value = f"((?:([^{chars}\\[]++)\\[([^{chars}]*)\\]|{value}))"
            groups += [key, _FUNCTION, _PARAMS]
        elif key in USED_ATTRIBUTES:
            value = f"({value})"
            groups.append(key)
        pattern.append(re.escape(sep + key + equals + quote) + value + quote)
    if len(set(names)) != len(names):
        return None
    children = "|".join(sorted(CHILD_OUTCOME, key=len, reverse=True))
    pattern.append(_END.format(children=children, name=_NAME))
    return re.compile("".join(pattern)), [*groups, _CHILD, _CHILD_ATTRIBUTES, _TEXT]


def _children(
    children: list[str | None], attributes: list[str | None], texts: list[str | None]
) -> tuple[dict[int, str], dict[int, str]] | None:
    """(outcomes, messages) of the scanned testcases with a child, by scan index.

    The very rules of junit's `_case_child` for a testcase's only child; None when the
    document is not well-formed there (a repeated attribute, "]]>" in text).
    """
    outcomes: dict[int, str] = {}
    messages: dict[int, str] = {}
    for index in compress(range(len(children)), children):
        pairs = _CHILD_ATTRIBUTE.findall(attributes[index] or "")
        given = {key: value for key, _quote, value in pairs}
        text = texts[index]
        if len(given) != len(pairs) or (text is not None and "]]>" in text):
            return None
        outcomes[index] = CHILD_OUTCOME[children[index] or ""]
        message = given.get("message") or (text or "").strip()
        if message:
            messages[index] = message[:MAX_MESSAGE_CHARS]
    return outcomes, messages


def _expand(
    cols: _BulkColumns,
    starts: list[int],
    tags: int,
    outcomes: dict[int, str],
    messages: dict[int, str],
) -> bool:
    """Map residual rows and scanned testcases (`outcomes`, `messages` by scan index) to
    document rows; False unless every marker came back in order."""
    runs = [attrs.get(MARKER_ATTRIBUTE) for attrs in cols.cases]
    marker_rows = [row for row, run in enumerate(runs) if run is not None]
    if [runs[row] for row in marker_rows] != [str(run) for run in range(len(starts))]:
        return False
    bounds = iter(zip(starts, [*starts[1:], tags], strict=True))
    cols.pieces = [_REAL if run is None else next(bounds) for run in runs]
    cols.real_rows = [row for row, run in enumerate(runs) if run is None]
    sizes = np.array([1 if start < 0 else end - start for start, end in cols.pieces])
    cols.case_suites = np.repeat(np.array(cols.case_suites, dtype=np.int64), sizes).tolist()
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    # A scanned testcase's document row: its run's first row plus its place in the run.
    shift = first[marker_rows] - np.array(starts)
    scanned = np.array(list(outcomes), dtype=np.int64)
    rows = (scanned + shift[np.searchsorted(starts, scanned, side="right") - 1]).tolist()
    first_rows = first.tolist()
    cols.outcomes = _moved(cols.outcomes, first_rows) | dict(
        zip(rows, outcomes.values(), strict=True)
    )
    cols.messages = _moved(cols.messages, first_rows) | {
        row: messages[index] for row, index in zip(rows, outcomes, strict=True) if index in messages
    }
    cols.reruns = _moved(cols.reruns, first_rows)
    cols.flaky_runs = _moved(cols.flaky_runs, first_rows)
    return True


def _moved(sparse: dict[int, _V], first_rows: list[int]) -> dict[int, _V]:
    """A residual-row-keyed dict re-keyed by document row."""
    return {first_rows[row]: value for row, value in sparse.items()}
