"""The queue's pure domain: item order, the cut of heavy files, shrinking batches, budget fit
and the report of what ran where."""

from __future__ import annotations

import pandas as pd

from analysis.queue import Candidate, batch_target_s, fits_budget, pick_batch, queue_work_items
from analysis.queue.report import ClaimRow, RanTwice, ResultRow, queue_report


def test_items_are_heaviest_first_and_unknown_tests_say_they_are_estimated() -> None:
    durations = pd.Series({"a.py::t1": 1.0, "b.py::t1": 5.0, "c.py::t1": 3.0})
    collected = ["a.py::t1", "b.py::t1", "c.py::t1", "d.py::new"]
    items = queue_work_items(durations, collected, nodes=2)
    assert [i.unit for i in items][:2] == ["b.py", "c.py"]
    assert [i.position for i in items] == list(range(len(items)))
    new = next(i for i in items if "d.py::new" in i.nodeids)
    assert new.estimated == ("d.py::new",)
    assert new.predicted_s > 0  # a guess, not free
    assert sorted(n for i in items for n in i.nodeids) == sorted(collected)


def test_a_file_heavier_than_a_node_share_is_cut_finer_but_a_file_only_runner_keeps_it() -> None:
    heavy = {f"big.py::T{k}::t": 10.0 for k in range(6)}
    light = {f"s{k}.py::t": 1.0 for k in range(4)}
    durations = pd.Series({**heavy, **light})
    items = queue_work_items(durations, list(durations.index), nodes=3)
    assert max(i.predicted_s for i in items) < 60.0
    assert len([i for i in items if i.unit == "big.py"]) > 1
    whole = queue_work_items(durations, list(durations.index), nodes=3, runner="jest")
    assert [i.name for i in whole if i.unit == "big.py"] == ["big.py"]


def test_batches_shrink_as_the_queue_empties() -> None:
    assert batch_target_s(400.0, 2) > batch_target_s(40.0, 2) > batch_target_s(4.0, 2)
    assert batch_target_s(4.0, 2, min_batch_s=3.0) == 3.0  # a runner's start cost amortised


def test_budget_fit_counts_the_stated_error_as_margin() -> None:
    assert fits_budget(10.0, 12.0, 0.1)
    assert not fits_budget(10.0, 10.5, 0.1)
    assert fits_budget(1e9, None, 0.5)


def test_pick_takes_in_order_up_to_the_target_and_skips_what_cannot_fit() -> None:
    candidates = [Candidate(0, 50.0), Candidate(1, 8.0), Candidate(2, 5.0), Candidate(3, 1.0)]
    free = pick_batch(candidates, target_s=55.0)
    assert free.positions == (0,)  # 50 then 8 would pass 55
    tight = pick_batch(candidates, target_s=100.0, remaining_s=10.0, error=0.1)
    assert 0 in tight.unfit
    assert tight.positions == (1, 3)  # 8 fits, 8 + 5 would not, 8 + 1 does (x1.1 <= 10)
    none = pick_batch(candidates, target_s=100.0, remaining_s=0.5, error=0.0)
    assert none.positions == ()
    assert none.unfit == (0, 1, 2, 3)


def test_report_names_tests_run_twice_never_run_and_the_idle_tail() -> None:
    claims = [
        ClaimRow(1, "1", 1, "finished", 0.0, 0.1, 10.0, 9.0, 1, 2),
        ClaimRow(2, "2", 1, "finished", 0.0, 0.1, 7.0, 7.0, 1, 1),
        ClaimRow(3, "2", 2, "finished", 8.0, 8.1, 12.0, 3.0, 1, 1),
    ]
    results = [
        ResultRow("a.py::t", "1", 1, 1, 4.0),
        ResultRow("b.py::t", "1", 1, 1, 5.0),
        ResultRow("c.py::t", "2", 1, 2, 6.0),
        ResultRow("c.py::t", "2", 2, 3, 3.0),
    ]
    report = queue_report(
        ["a.py::t", "b.py::t", "c.py::t", "d.py::t"], claims, results, pending_items=0
    )
    assert report.ran_twice == (RanTwice("c.py::t", ("2@1", "2@2")),)
    assert report.rerun_by_retry == 1
    assert report.never_ran == ("d.py::t",)
    assert report.idle_tail_s == 2.0
    assert report.done
    assert report.nodes[0].batches[0].tests == 2
