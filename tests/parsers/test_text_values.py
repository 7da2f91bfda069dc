"""storable_column against storable_text applied to every value on its own; the joined and
longest strings of a column against a plain reading of its values."""

from __future__ import annotations

import math

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from pgcodec.text_values import joined_text, longest_text, storable_column, storable_text

# Text with the characters PostgreSQL refuses (NUL, every kind of surrogate) among others.
_CHARS = st.sampled_from(["a", "é", "\x00", "\ud800", "\udfff", "\udbff", "\U0001f600", "\t", ""])
_VALUES = st.one_of(st.none(), st.lists(_CHARS, max_size=6).map("".join))


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUES, max_size=8), st.sampled_from(["object", "str"]))
def test_every_value_is_made_storable_as_on_its_own(values: list[str | None], dtype: str) -> None:
    column = pd.Series(values, dtype=object if dtype == "object" else "str")
    got = storable_column(column).tolist()
    want = [storable_text(v) if isinstance(v, str) else v for v in column.tolist()]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g == w or (pd.isna(g) and pd.isna(w))  # missing stays missing


def test_a_clean_column_is_returned_as_is() -> None:
    column = pd.Series(["a.py::t", None, "é"], dtype=object)
    assert storable_column(column) is column


# Missing values of every kind a column holds, and numbers a parser may leave in one.
_ANY = st.one_of(_VALUES, st.just(math.nan), st.integers(), st.just(pd.NA))


@settings(max_examples=300, deadline=None)
@given(st.lists(_ANY, max_size=8), st.sampled_from(["", "\n"]), st.booleans())
def test_joined_and_longest_text_read_only_the_strings(
    values: list[object], sep: str, as_series: bool
) -> None:
    strings = [v for v in values if isinstance(v, str)]
    given_values = pd.Series(values, dtype=object) if as_series else values
    assert joined_text(given_values, sep) == sep.join(strings)
    assert longest_text(given_values) == max((len(v) for v in strings), default=0)
