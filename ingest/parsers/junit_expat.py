"""The expat machinery shared by the JUnit parser and its bulk scanner (junit_fast).

An expat parser that refuses DTDs and entities and collects, per testcase element, its
attribute dict, its suite and sparse extras (outcome child, message, Surefire reruns) into
`Columns`; `junit` builds the results frame from them, `junit_fast` reuses the very same
handlers on what its regex scan leaves.
"""

from __future__ import annotations

import re
from itertools import repeat
from typing import Any, NoReturn
from xml.parsers import expat

from ingest.parsers.nodeid import PYTEST_SUITE_NAME

MAX_MESSAGE_CHARS = 500
_SEVERITY = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
CHILD_OUTCOME = {
    "failure": "failed",
    "error": "error",
    "skipped": "skipped",
    "skip": "skipped",
    "ignored": "skipped",
    "disabled": "skipped",
}
_FLAKY_CHILDREN = frozenset({"flakyFailure", "flakyError"})
_RERUN_CHILDREN = frozenset({"rerunFailure", "rerunError"})
ENCODING_DECL = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


class Forbidden(Exception):
    """Raised from inside an expat handler to stop parsing a hostile or foreign document."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Columns:
    """What the expat handlers collect: each testcase's attribute dict plus sparse extras."""

    def __init__(self) -> None:
        # One entry per testcase element: its attributes and the index of its <testsuite>.
        self.cases: list[dict[str, str]] = []
        self.case_suites: list[int] = []
        # Per <testsuite>, index 0 being "no suite": (name, file, is_pytest, hostname).
        self.suites: list[tuple[str | None, str | None, bool, str | None]] = [
            (None, None, False, None)
        ]
        # Sparse, row index -> value: only rows with children or a status attribute.
        self.outcomes: dict[int, str] = {}
        self.messages: dict[int, str] = {}
        self.reruns: dict[int, int] = {}
        self.flaky_runs: dict[int, int] = {}
        self.properties: dict[str, str] = {}
        self.timestamp: str | None = None
        self.hostname: str | None = None
        self.root_time: str | None = None

    @property
    def count(self) -> int:
        """How many testcase rows were collected."""
        return len(self.case_suites)

    def column(self, key: str) -> list[str | None]:
        """One attribute of every testcase, None where absent (a new list: callers fill it)."""
        return attribute_column(self.cases, key)

    def split_names(self) -> tuple[list[str | None], list[str | None]] | None:
        """(function, params) of names "f[p]", (None, None) for the others, if already split."""
        return None


def _forbid_doctype(*_args: object) -> NoReturn:
    raise Forbidden("xml-dtd-forbidden", "DOCTYPE declarations are not allowed in test reports")


def _forbid_entity(*_args: object) -> NoReturn:
    raise Forbidden("xml-entity-forbidden", "entity declarations are not allowed")


def hardened_parser(encoding: str | None, namespace_separator: str | None = None) -> Any:
    """An expat parser that refuses DTDs and entity declarations (raising Forbidden)."""
    parser = (
        expat.ParserCreate(encoding)
        if namespace_separator is None
        else expat.ParserCreate(encoding, namespace_separator)
    )
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.buffer_text = True
    parser.buffer_size = 1 << 16
    parser.StartDoctypeDeclHandler = _forbid_doctype
    parser.EntityDeclHandler = _forbid_entity
    parser.UnparsedEntityDeclHandler = _forbid_entity
    parser.ExternalEntityRefHandler = _forbid_entity
    return parser


def make_parser(cols: Columns, encoding: str | None) -> Any:
    """An expat parser that refuses DTDs and entities and fills `cols` as it goes."""
    parser = hardened_parser(encoding)

    # The hot path is one call per testcase: keep it to two appends (the attribute dict
    # expat already built, and the suite index); everything else is derived afterwards.
    cases = cols.cases
    cases_append = cases.append
    case_suites_append = cols.case_suites.append
    suites = cols.suites
    outcomes = cols.outcomes
    messages = cols.messages
    properties = cols.properties
    suite_stack = [0]
    depth = 0  # 0 outside a testcase, 1 on the testcase, 2 on its children...
    in_properties = 0
    collecting: list[str] | None = None

    def collect_text(chunk: str) -> None:
        if collecting is not None:
            collecting.append(chunk)

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal depth, in_properties, collecting
        if depth:
            depth += 1
            if depth == 2:
                _case_child(name, attrs)
            return
        if name == "testcase":
            depth = 1
            cases_append(attrs)
            case_suites_append(suite_stack[-1])
        elif name == "testsuite":
            parent = suites[suite_stack[-1]]
            suite_name = attrs.get("name")
            suite_stack.append(len(suites))
            suites.append(
                (
                    suite_name,
                    attrs.get("file") or parent[1],
                    suite_name == PYTEST_SUITE_NAME,
                    attrs.get("hostname") or parent[3],
                )
            )
            if cols.timestamp is None:
                cols.timestamp = attrs.get("timestamp")
            if cols.hostname is None:
                cols.hostname = attrs.get("hostname")
            if cols.root_time is None and suite_name == PYTEST_SUITE_NAME:
                cols.root_time = attrs.get("time")
        elif name == "properties":
            in_properties += 1
        elif name == "property" and in_properties:
            key = attrs.get("name")
            if key:
                properties.setdefault(key, attrs.get("value", ""))

    def _case_child(name: str, attrs: dict[str, str]) -> None:
        nonlocal collecting
        row = len(cases) - 1
        outcome = CHILD_OUTCOME.get(name)
        if outcome is not None:
            if _SEVERITY[outcome] >= _SEVERITY[outcomes.get(row, "passed")]:
                outcomes[row] = outcome
                message = attrs.get("message")
                if message:
                    messages[row] = message[:MAX_MESSAGE_CHARS]
                else:
                    messages.pop(row, None)
                    collecting = []
                    parser.CharacterDataHandler = collect_text
        elif name in _FLAKY_CHILDREN:
            cols.flaky_runs[row] = cols.flaky_runs.get(row, 0) + 1
        elif name in _RERUN_CHILDREN:
            cols.reruns[row] = cols.reruns.get(row, 0) + 1

    def end(name: str) -> None:
        nonlocal depth, in_properties, collecting
        if depth:
            if depth == 2 and collecting is not None:
                parser.CharacterDataHandler = None
                message = "".join(collecting).strip()[:MAX_MESSAGE_CHARS]
                if message:
                    messages[len(cases) - 1] = message
                collecting = None
            depth -= 1
            return
        if name == "testsuite":
            suite_stack.pop()
        elif name == "properties":
            in_properties -= 1

    def first_start(name: str, attrs: dict[str, str]) -> None:
        if name not in ("testsuites", "testsuite"):
            raise Forbidden(
                "not-junit",
                f"root element is <{name}>, not <testsuites> or <testsuite>: not a JUnit report",
            )
        parser.StartElementHandler = start
        start(name, attrs)

    parser.StartElementHandler = first_start
    parser.EndElementHandler = end
    return parser


def attribute_column(cases: list[dict[str, str]], key: str) -> list[str | None]:
    """One attribute of every testcase (None where absent), looked up without a Python loop."""
    return list(map(dict.get, cases, repeat(key)))
