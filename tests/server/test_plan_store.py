"""Plans as handed out: ids name the selection, the first prediction is kept, the
unexecuted ones are bounded, and the runs that executed a plan are found by its id."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import Engine, text

import app.db.plans as plans_db
from analysis.accuracy.plan_record import PlanRecord, PredictedJob, split_plan_id, split_plan_record
from analysis.split.job_model import JobParts
from analysis.split.result import PlannedJob
from tests.conftest import ProjectFixture


def split_jobs(wall_s: float, members: list[list[str]]) -> list[PlannedJob]:
    # The model's parts: an unknown one (NaN, or no CPU share) is left out, never stored as 0.
    parts = JobParts(4.0, 0.0, math.nan, 6.0, wall_s - 10, cpu_share=None, inputs_missing=())
    return [
        PlannedJob(
            name=f"job {i + 1}",
            members=tuple(m),
            runner_args=tuple(m),
            n_tests=len(m),
            test_s=wall_s - 10,
            overhead_s=10.0,
            workers=1,
            machine=None,
            wall_s=wall_s,
            cost=None,
            parts=parts,
        )
        for i, m in enumerate(members)
    ]


def test_the_id_names_the_selection_not_the_prediction() -> None:
    one = split_plan_record("os=linux", split_jobs(60.0, [["a.py"], ["b.py"]]))
    same = split_plan_record("os=linux", split_jobs(70.0, [["a.py"], ["b.py"]]))
    moved = split_plan_record("os=linux", split_jobs(60.0, [["a.py", "b.py"], []]))
    other_cell = split_plan_id("os=macos", split_jobs(60.0, [["a.py"], ["b.py"]]))
    assert one.id == same.id
    assert len({one.id, moved.id, other_cell}) == 3
    assert {"ci_setup_s": 4.0, "first_use_s": 6.0}.items() <= one.jobs[0].parts.items()
    assert not {"collect_s", "wall_s", "cpu_share"} & one.jobs[0].parts.keys()
    assert one.wait_s == 60.0
    assert one.machine_s == 120.0
    assert one.cost is None


def stored(engine: Engine, project: ProjectFixture) -> dict[str, float]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, wait_s FROM plan WHERE project_id = :p"), {"p": project.id}
        ).all()
    return {str(r[0]): float(r[1]) for r in rows}


def test_the_first_prediction_is_kept(engine: Engine, project: ProjectFixture) -> None:
    first = split_plan_record("os=linux", split_jobs(60.0, [["a.py"], ["b.py"]]))
    later = split_plan_record("os=linux", split_jobs(90.0, [["a.py"], ["b.py"]]))
    for record in (first, later):
        with engine.begin() as conn:
            plans_db.store_plan(conn, project.id, record)
    assert stored(engine, project) == {first.id: 60.0}
    with engine.connect() as conn:
        [back] = plans_db.load_plans(conn, project.id, plan_id=first.id)
    assert back.jobs == first.jobs
    assert back.created_at is not None


def test_unexecuted_plans_are_bounded_and_executed_ones_stay(
    engine: Engine, project: ProjectFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plans_db, "MAX_UNEXECUTED_PLANS", 2)
    job = PredictedJob(1, "job 1", wall_s=1.0, tests_s=1.0, setup_s=0.0)
    ids = [f"plan{i:08d}" for i in range(5)]
    with engine.begin() as conn:
        plans_db.store_plan(conn, project.id, PlanRecord(ids[0], "split", "", (job,)))
        # A run executed the first plan: it is not what the bound drops.
        conn.execute(
            text("INSERT INTO cell (project_id, job) VALUES (:p, 'job 1')"), {"p": project.id}
        )
        conn.execute(
            text(
                "INSERT INTO run (project_id, upload_id, cell_id, job, started_at, day, plan_id) "
                "SELECT :p, 0, id, 'job 1', now(), current_date, :plan FROM cell "
                "WHERE project_id = :p"
            ),
            {"p": project.id, "plan": ids[0]},
        )
    for plan_id in ids[1:]:
        with engine.begin() as conn:
            plans_db.store_plan(conn, project.id, PlanRecord(plan_id, "split", "", (job,)))
    assert set(stored(engine, project)) == {ids[0], ids[3], ids[4]}
    with engine.connect() as conn:
        executed = plans_db.load_plans(conn, project.id)
        runs = plans_db.load_plan_runs(conn, project.id, [ids[0]])
    assert [p.id for p in executed] == [ids[0]]
    assert runs["plan_id"].tolist() == [ids[0]]
