"""Answer caches are keyed on the question's value, not on its repr(): equal questions share an
entry whatever order their labels were given in, and the key is hashable (issue 28)."""

from __future__ import annotations

from datetime import date

from analysis.filters import Filters
from analysis.split.options import SplitOptions


def test_equal_filters_have_one_key_whatever_the_label_order() -> None:
    one = Filters(labels={"python": ("3.12",), "os": ("linux", "mac")})
    other = Filters(labels={"os": ("linux", "mac"), "python": ("3.12",)})
    assert one.key == other.key
    assert hash(one.key) == hash(other.key)


def test_different_filters_have_different_keys() -> None:
    keys = {
        Filters().key,
        Filters(branches=("main",)).key,
        Filters(jobs=("main",)).key,
        Filters(labels={"main": ()}).key,
        Filters(since=date(2026, 1, 1)).key,
        Filters(until=date(2026, 1, 1)).key,
        Filters(files=("a*",)).key,
        Filters(markers=("a*",)).key,
        Filters(exclude_markers=("a*",)).key,
    }
    assert len(keys) == 9


def test_split_options_are_their_own_key() -> None:
    assert hash(SplitOptions(jobs=(2, 3))) == hash(SplitOptions(jobs=(2, 3)))
    assert SplitOptions(jobs=(2, 3)) != SplitOptions(jobs=(2, 4))
