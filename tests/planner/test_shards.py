"""assign_shards: deterministic, complete, never empty, new tests placed by estimate."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.split.shards import assign_shards

HISTORY = pd.Series(
    {
        "a.py::t1": 300.0,
        "a.py::t2": 300.0,
        "b.py::t": 400.0,
        "c.py::T::x": 100.0,
        "c.py::T::y": 100.0,
    }
)


def test_balanced_and_complete() -> None:
    shards = assign_shards(HISTORY, None, 2)
    assert [s.index for s in shards] == [1, 2]
    assert sorted(n for s in shards for n in s.nodeids) == sorted(HISTORY.index)
    # Whole files: a.py 600 | b.py + c.py 600.
    assert sorted(s.predicted_s for s in shards) == [600.0, 600.0]
    assert sorted(s.members for s in shards) == [("a.py",), ("b.py", "c.py")]


def test_new_tests_are_placed_by_estimate() -> None:
    collected = [*HISTORY.index, "a.py::t3", "d.py::new"]
    shards = assign_shards(HISTORY, collected, 2)
    placed = {n: s.index for s in shards for n in s.nodeids}
    assert sorted(placed) == sorted(collected)
    new = sorted(n for s in shards for n in s.new_tests)
    assert new == ["a.py::t3", "d.py::new"]
    # a.py::t3 is guessed from a.py (300), d.py::new from the project median (300):
    # total 1800, so each shard should hold 900.
    assert sorted(s.predicted_s for s in shards) == [900.0, 900.0]


def test_deleted_tests_are_not_sharded() -> None:
    shards = assign_shards(HISTORY, ["b.py::t", "c.py::T::x"], 2)
    assert sorted(n for s in shards for n in s.nodeids) == ["b.py::t", "c.py::T::x"]


def test_no_empty_shard_while_there_are_enough_tests() -> None:
    # One file of 4 tests and 4 shards: the file must be broken up.
    history = pd.Series({f"only.py::t{i}": 1.0 for i in range(4)})
    shards = assign_shards(history, None, 4)
    assert [len(s.nodeids) for s in shards] == [1, 1, 1, 1]
    few = assign_shards(history, None, 6)
    assert sorted(len(s.nodeids) for s in few) == [0, 0, 1, 1, 1, 1]


def test_nothing_collected_gives_empty_shards() -> None:
    assert [s.nodeids for s in assign_shards(HISTORY, [], 3)] == [(), (), ()]


def test_total_must_be_positive() -> None:
    with pytest.raises(ValueError, match="total"):
        assign_shards(HISTORY, None, 0)


nodeid_st = st.builds(
    lambda f, t: f"f{f}.py::t{t}", st.integers(min_value=0, max_value=5), st.integers(0, 30)
)


@settings(max_examples=60, deadline=None)
@given(
    known=st.dictionaries(nodeid_st, st.floats(min_value=0, max_value=100), max_size=30),
    extra=st.lists(nodeid_st, max_size=20),
    total=st.integers(min_value=1, max_value=6),
)
def test_shard_properties(known: dict[str, float], extra: list[str], total: int) -> None:
    history = pd.Series(known, dtype="float64")
    collected = [*known, *extra]
    shards = assign_shards(history, collected, total)
    # Shuffled input order must not matter: every CI machine computes the same shards.
    again = assign_shards(history.sample(frac=1.0, random_state=1), collected[::-1], total)
    assert [s.nodeids for s in shards] == [s.nodeids for s in again]
    everything = [n for s in shards for n in s.nodeids]
    assert sorted(everything) == sorted(set(collected))  # each exactly once
    if len(set(collected)) >= total:
        assert all(s.nodeids for s in shards)


def test_a_plan_id_names_the_whole_assignment() -> None:
    from analysis.split.shards import plan_id

    shards = assign_shards(HISTORY, None, 2)
    assert plan_id(shards) == plan_id(assign_shards(HISTORY, None, 2))
    assert len(plan_id(shards)) == 12
    # Another split of the same tests is another plan; so is another shard count.
    assert plan_id(shards) != plan_id(assign_shards(HISTORY, None, 3))
    moved = HISTORY.copy()
    moved["b.py::t"] = 1.0
    assert plan_id(assign_shards(moved, None, 2)) != plan_id(shards)
