"""Covering-array generators: the covering property, sizes at the known bounds, exactness."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.reduce.covering import (
    build_covering,
    cover_by_max_levels,
    cover_pairs_ipog,
    is_covering,
    lower_bound,
    search_exact,
    uncovered_tuples,
)

AUGMIX = (3, 2, 2, 2, 2, 2)  # fill x3, five booleans-like arguments x2


def _filled(rows):
    return [tuple(0 if v is None else v for v in r) for r in rows]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5))
def test_strength_two_covers_every_pair(levels):
    array = build_covering(levels, 2)
    assert is_covering(array.rows, levels, 2)
    assert array.size >= lower_bound(levels, 2)
    assert len(set(array.rows)) == array.size


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=8))
def test_strength_one_is_optimal(levels):
    array = build_covering(levels, 1)
    assert is_covering(array.rows, levels, 1)
    assert array.size == max(levels)
    assert array.proven_minimal


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=2, max_size=4).flatmap(
        lambda lv: st.tuples(
            st.just(lv),
            st.dictionaries(
                st.tuples(*(st.integers(0, n - 1) for n in lv)),
                st.floats(0.01, 10.0),
                max_size=20,
            ),
        )
    ),
    st.sampled_from([1, 2]),
)
def test_costs_never_break_coverage(case, strength):
    levels, costs = case
    array = build_covering(levels, strength, costs=costs, default_cost=1.0)
    assert is_covering(array.rows, levels, strength)


def test_ipog_and_max_levels_cover_on_their_own():
    levels = (4, 3, 3, 2, 2)
    assert is_covering(_filled(cover_pairs_ipog(levels)), levels, 2)
    rows = cover_by_max_levels(levels)
    assert len(rows) == 4
    assert is_covering(_filled(rows), levels, 1)


def test_uncovered_tuples_names_the_missing_pair():
    rows = [(0, 0), (0, 1), (1, 0)]
    assert uncovered_tuples(rows, (2, 2), 2) == [((0, 1), (1, 1))]
    assert uncovered_tuples(rows, (2, 2), 1) == []


def test_lower_bounds():
    assert lower_bound(AUGMIX, 1) == 3
    assert lower_bound(AUGMIX, 2) == 6
    assert lower_bound((4,), 2) == 4  # a single argument: pairs are just its values


def test_augmix_strength_one_is_three_rows():
    array = build_covering(AUGMIX, 1)
    assert array.size == 3
    assert array.proven_minimal


def test_augmix_strength_two_is_seven_and_six_does_not_exist():
    array = build_covering(AUGMIX, 2)
    assert array.size <= 7
    assert is_covering(array.rows, AUGMIX, 2)
    # Exhaustive (no node budget): no 6-row pair covering of 3x2^5 exists.
    six = search_exact(AUGMIX, 2, 6, node_limit=None)
    assert six.complete
    assert six.rows is None
    assert array.size == 7
    assert array.proven_minimal


def test_exact_search_finds_six_rows_for_four_binary_arguments():
    # 3x2^4 does fit in 6 rows: the search is not just always answering "no".
    found = search_exact((3, 2, 2, 2, 2), 2, 6, node_limit=None)
    assert found.complete
    assert found.rows is not None
    assert len(found.rows) == 6
    assert is_covering(found.rows, (3, 2, 2, 2, 2), 2)


def test_exact_search_over_given_candidates_is_exhaustive():
    levels = (2, 2)
    cands = [(0, 0), (1, 1), (0, 1)]  # (1, 0) is missing: no covering exists at any size
    result = search_exact(levels, 2, 4, candidates=cands, node_limit=None)
    assert result.complete
    assert result.rows is None


def test_measured_rows_are_preferred_and_cheapest_chosen():
    levels = (2, 2)
    every = list(itertools.product(range(2), range(2)))
    costs: dict[tuple[int, ...], float] = {row: 1.0 + i for i, row in enumerate(every)}
    array = build_covering(levels, 1, costs=costs)
    # Two rows covering both values of both arguments: {(0,0),(1,1)} = 5 or {(0,1),(1,0)} = 5
    # tie; either way the total is the minimum 5.
    assert sum(costs[r] for r in array.rows) == 5.0
    cheap_diagonal: dict[tuple[int, ...], float] = {
        (0, 0): 1.0,
        (1, 1): 1.0,
        (0, 1): 3.0,
        (1, 0): 3.0,
    }
    array = build_covering(levels, 1, costs=cheap_diagonal)
    assert set(array.rows) == {(0, 0), (1, 1)}


def test_invalid_input_is_rejected():
    with pytest.raises(ValueError, match="strength"):
        build_covering((2, 2), 3)
    with pytest.raises(ValueError, match="at least one value"):
        build_covering((2, 0), 2)
    with pytest.raises(ValueError, match="does not fit"):
        is_covering([(0, 2)], (2, 2), 2)
