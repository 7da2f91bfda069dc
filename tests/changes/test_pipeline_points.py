"""When a pipeline's point is final, and what it is (analysis/changes/pipelines.py)."""

from __future__ import annotations

from analysis.changes.pipelines import (
    FinalPipeline,
    PendingPipeline,
    expected_cells,
    final_pipelines,
    pipeline_point,
)

ABC = frozenset({1, 2, 3})


def _pending(name: str, cells: set[int], later: int) -> PendingPipeline:
    return PendingPipeline(name, frozenset(cells), later)


def test_a_complete_pipeline_is_final_at_once_though_the_next_has_started() -> None:
    got = final_pipelines([_pending("p", {1, 2, 3}, 1)], [ABC])
    assert got == [FinalPipeline("p", push=True)]


def test_an_incomplete_pipeline_waits_and_holds_the_later_ones_back() -> None:
    pending = [_pending("p", {1, 2}, 1), _pending("q", {1, 2, 3}, 0)]
    assert final_pipelines(pending, [ABC]) == []


def test_an_overtaken_incomplete_pipeline_is_final_but_left_out() -> None:
    pending = [_pending("p", {1, 2}, 2), _pending("q", {1, 2, 3}, 1), _pending("r", {1}, 0)]
    assert final_pipelines(pending, [ABC, ABC]) == [
        FinalPipeline("p", push=False),
        FinalPipeline("q", push=True),
    ]


def test_the_first_pipelines_are_pushed_when_overtaken() -> None:
    assert final_pipelines([_pending("p", {1}, 1)], []) == []
    assert final_pipelines([_pending("p", {1}, 2)], []) == [FinalPipeline("p", push=True)]


def test_expected_jobs_follow_the_majority_of_the_last_three() -> None:
    assert expected_cells([]) is None
    assert expected_cells([ABC]) == ABC
    # One cancelled pipeline changes nothing.
    assert expected_cells([ABC, ABC, frozenset({1})]) == ABC
    # A job taken from the matrix is no longer expected after two pipelines without it.
    assert expected_cells([ABC, frozenset({1, 2}), frozenset({1, 2})]) == {1, 2}
    # One added is expected once two of the last three had it.
    assert expected_cells([ABC, ABC | {4}, ABC]) == ABC
    assert expected_cells([ABC, ABC | {4}, ABC | {4}]) == ABC | {4}
    # Only the last three count.
    assert expected_cells([ABC, ABC, frozenset({9}), frozenset({9}), frozenset({9})]) == {9}


def test_a_matrix_that_shrinks_costs_two_points() -> None:
    history = [ABC, ABC, ABC]
    pushed = []
    for i in range(4):
        (final,) = final_pipelines([_pending(f"p{i}", {1, 2}, 2)], history)
        pushed.append(final.push)
        history.append(frozenset({1, 2}))
    assert pushed == [False, False, True, True]


def test_the_point_is_the_longest_job_and_the_sum() -> None:
    jobs = [{"job_wall_s": 10.0, "wall_s": 8.0}, {"job_wall_s": None, "wall_s": 30.0}]
    assert pipeline_point(jobs) == {"wall": 30.0, "machine": 40.0}
    assert pipeline_point([*jobs, {"job_wall_s": None, "wall_s": None}]) is None
    assert pipeline_point([]) is None
