"""row_checks.nameless against a plain reading of the rule, row by row."""

from __future__ import annotations

import pytest

from ingest.parsers.row_checks import nameless


def _plain(nodeid: object, prefix_only: bool) -> bool:
    if not isinstance(nodeid, str) or not nodeid.strip():
        return True
    return prefix_only and nodeid.rstrip().endswith("::")


NAMES: list[object] = [
    "a.py::t",
    "m.C::",
    "m.C::  ",
    "m.C::\u2003",
    "a::\nb",
    "x::y::",
    "",
    "   ",
    None,
    "t[::]",
    "::",
]


@pytest.mark.parametrize("prefix_only", [False, True])
@pytest.mark.parametrize("odd", [*NAMES, NAMES])
def test_every_row_is_judged_as_the_rule_says(prefix_only: bool, odd: object) -> None:
    # Each odd name alone among ordinary ones, then all of them together.
    rows: list[object] = [f"tests/t.py::t{i}" for i in range(200)]
    for at, name in enumerate(odd if isinstance(odd, list) else [odd]):
        rows.insert(at * 17 + 3, name)
    got = nameless(rows, prefix_only=prefix_only).tolist()
    assert got == [_plain(name, prefix_only) for name in rows]


def test_no_name_ending_in_a_class_prefix_drops_nothing() -> None:
    rows = [f"tests/t.py::T::t{i}" for i in range(100)] + ["a::\nb"]
    assert not nameless(rows, prefix_only=True).any()
