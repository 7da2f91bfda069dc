"""A pipeline's wall and machine time as change series: pushed once per pipeline when its
expected jobs are in (docs/changes.md), through the real worker; a step is found at its
commit, a flat history stays silent, a worker killed before the push loses nothing and pushes
nothing twice, and REST, CLI and page list the same pipeline changes."""

from __future__ import annotations

import json
import os
import signal

import httpx
import lxml.html  # type: ignore[import-untyped]
import numpy as np
import pandas as pd
import psycopg
import pytest
from click.testing import CliRunner

from analysis.changes import detect_changes
from app.cli.main import cli
from app.db.engine import make_engine
from app.db.projects import get_project
from app.db.uploads import IncomingFile, UploadMetadata, insert_upload
from ingest.change_detection import retry_backlog
from ingest.change_states import forget_all
from ingest.worker import WorkerConfig, drain, process_next
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.pages.conftest import sign_in_form
from tests.pipeline_history import JOBS, PIPELINES, STEP_AT, commit_of, job_wall, pipeline_uploads
from tests.server.conftest import sqlalchemy_to_dsn, start_worker, wait_for
from tests.uploads import upload_all

PIPELINE_LOCK_CLASS = 727030  # ingest/pipeline_changes.py's advisory lock class of a project
NAMES = {"wall": "pipeline wall", "machine": "pipeline machine time"}


def _get(server: LiveServer, project: ProjectFixture, **params: object) -> httpx.Response:
    return httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/changes",
        params=params,  # type: ignore[arg-type]
        headers={"Authorization": f"Bearer {project.read_token}"},
    )


@pytest.fixture(scope="module")
def stepped(live_server: LiveServer, engine: object) -> ProjectFixture:
    project = make_project(engine)  # type: ignore[arg-type]
    upload_all(live_server, project.upload_token, pipeline_uploads(step=0.3))
    return project


def _pushed(dsn: str, project_id: int) -> pd.DataFrame:
    """The project's watched pipelines as pushed, in push order."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT pipeline, pushed, jobs, wall_s, machine_s, run_id FROM pipeline_watch "
            "WHERE project_id = %s AND final_at IS NOT NULL ORDER BY first_run_id",
            (project_id,),
        ).fetchall()
    return pd.DataFrame(rows, columns=["pipeline", "pushed", "jobs", "wall_s", "machine_s", "run"])


def _want_point(pipeline: str) -> tuple[float, float]:
    i = int(pipeline.removeprefix("p-"))
    walls = [job_wall(i, job, step=0.3) for job in JOBS]
    return max(walls), sum(walls)


def test_a_step_in_the_pipeline_wall_is_found_at_its_commit(
    live_server: LiveServer, stepped: ProjectFixture, database: Database
) -> None:
    response = _get(live_server, stepped, kind="pipeline")
    assert response.status_code == 200, response.text
    found = response.json()["changes"]
    assert sorted(c["name"] for c in found) == sorted(NAMES.values())
    for change in found:
        assert change["kind"] == "pipeline"
        assert change["commit_after"] == commit_of(STEP_AT)
        assert change["commit_before"] == commit_of(STEP_AT - 1)
        assert change["pipeline_after"] == f"p-{STEP_AT}"
        assert change["branch"] == "main"
        assert change["job"] == ""
    wall = next(c for c in found if c["name"] == NAMES["wall"])
    assert wall["median_before_s"] == pytest.approx(JOBS["slow"], rel=0.03)
    assert wall["median_after_s"] == pytest.approx(JOBS["slow"] * 1.3, rel=0.03)
    machine = next(c for c in found if c["name"] == NAMES["machine"])
    assert machine["delta_s"] == pytest.approx(0.3 * JOBS["slow"], rel=0.15)
    # Every pipeline was pushed once, whole: its three jobs, though the slowest arrived after
    # the next pipeline had started.
    with psycopg.connect(database.dsn) as conn:
        (project_id,) = conn.execute(  # type: ignore[misc]
            "SELECT id FROM project WHERE slug = %s", (stepped.slug,)
        ).fetchone()
    pushed = _pushed(database.dsn, project_id)
    assert pushed["pipeline"].tolist() == [f"p-{i}" for i in range(PIPELINES)]
    assert pushed["pushed"].all()
    assert (pushed["jobs"] == len(JOBS)).all()
    for row in pushed.itertuples():
        assert (row.wall_s, row.machine_s) == pytest.approx(_want_point(row.pipeline))
    # The other kinds do not list it; the job filter names jobs only.
    assert all(c["kind"] != "pipeline" for c in _get(live_server, stepped, kind="job").json()[
        "changes"
    ])  # fmt: skip
    assert all(c["kind"] != "pipeline" for c in _get(live_server, stepped, job="slow").json()[
        "changes"
    ])  # fmt: skip


def test_a_flat_history_stays_silent(
    live_server: LiveServer, engine: object, database: Database
) -> None:
    project = make_project(engine)  # type: ignore[arg-type]
    # Pipeline 15's slowest job never uploads (cancelled): overtaken, it is left out.
    uploads = [
        u for u in pipeline_uploads(step=0.0) if (u[2]["pipeline"], u[2]["job"]) != ("p-15", "slow")
    ]
    upload_all(live_server, project.upload_token, uploads)
    assert _get(live_server, project).json()["changes"] == []
    with psycopg.connect(database.dsn) as conn:
        (project_id,) = conn.execute(  # type: ignore[misc]
            "SELECT id FROM project WHERE slug = %s", (project.slug,)
        ).fetchone()
    final = _pushed(database.dsn, project_id).set_index("pipeline")
    assert final.index.tolist() == [f"p-{i}" for i in range(PIPELINES)]
    assert final.loc["p-15", "jobs"] == 2
    assert not final.loc["p-15", "pushed"]
    assert final.drop(index="p-15")["pushed"].all()


def test_rest_cli_and_page_list_the_same_pipeline_changes(
    live_server: LiveServer, stepped: ProjectFixture, database: Database
) -> None:
    rest = _get(live_server, stepped, kind="pipeline").json()
    assert len(rest["changes"]) == 2
    runner = CliRunner()
    env = {"DATABASE_URL": database.url}
    args = ["changes", "--project", stepped.slug, "--kind", "pipeline"]
    printed = runner.invoke(cli, [*args, "--json"], env=env)
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output) == rest
    text = runner.invoke(cli, args, env=env)
    assert text.exit_code == 0, text.output
    for change in rest["changes"]:
        assert f"change {change['id']} [open] pipeline {change['name']}" in text.output
    assert "job wall" not in text.output
    with httpx.Client(base_url=live_server.url, timeout=60) as client:
        fields = sign_in_form(client)
        client.post("/signin", data={**fields, "token": stepped.read_token})
        page = client.get(f"/p/{stepped.slug}/changes", params={"kind": "pipeline"})
        overview = client.get(f"/p/{stepped.slug}")
    assert overview.status_code == 200
    badges = {
        li.get("data-change"): " ".join(li.text_content().split())
        for li in lxml.html.fromstring(overview.text).cssselect("#changes-touching li")
    }
    for change in rest["changes"]:
        # Named as the pipeline's, not as some job's.
        assert f"% {change['name']}: " in badges[str(change["id"])]
    doc = lxml.html.fromstring(page.text)
    rows = doc.cssselect("#changes tbody tr[data-change]")
    assert [r.get("data-change") for r in rows] == [str(c["id"]) for c in rest["changes"]]
    shown = [r.cssselect("td")[2].text_content().strip() for r in rows]
    assert shown == [c["name"] for c in rest["changes"]]
    assert doc.cssselect('select[name=kind] option[value="pipeline"][selected]')


# --- exactly once across a killed worker and batched ingest ---------------------------------


UPLOADS = list(pipeline_uploads(step=0.3))  # in arrival order


def _queue(url: str, slug: str | None, uploads: slice) -> str:
    """Queue this slice of the stepped history's uploads, in order; the project's slug."""
    engine = make_engine(url, pool_size=1)
    try:
        slug = slug or make_project(engine).slug
        for name, body, meta in UPLOADS[uploads]:
            with engine.begin() as conn:
                project = get_project(conn, slug)
                assert project is not None
                insert_upload(
                    conn, project, [IncomingFile(name, body)], UploadMetadata.of(meta),
                    idempotency_key=None, max_report_bytes=10**9,
                )  # fmt: skip
    finally:
        engine.dispose()
    return slug


def _kill_before_the_push(url: str, project_id: int) -> None:
    """Run a real worker on the queued uploads while this test holds the project's pipeline
    lock; once its ingest committed and it waits to push, SIGKILL it."""
    dsn = sqlalchemy_to_dsn(url)
    with psycopg.connect(dsn, autocommit=True) as holder:
        holder.execute(
            "SELECT pg_advisory_lock(%s, hashint8(%s))", (PIPELINE_LOCK_CLASS, project_id)
        )
        worker = start_worker(url)
        try:

            def committed_and_waiting() -> bool:
                queued = holder.execute(
                    "SELECT count(*) FROM upload WHERE status <> 'done'"
                ).fetchone()
                waiting = holder.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone()
                return queued == (0,) and waiting == (1,)

            wait_for(committed_and_waiting, 120, "the worker's ingest committed, push waiting")
            os.kill(worker.pid, signal.SIGKILL)
            assert worker.wait(timeout=30) == -signal.SIGKILL
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        holder.execute(
            "SELECT pg_advisory_unlock(%s, hashint8(%s))", (PIPELINE_LOCK_CLASS, project_id)
        )
        marks = holder.execute("SELECT count(*) FROM change_backlog").fetchone()
    assert marks is not None
    assert marks[0] >= 1


def test_pushed_once_across_a_killed_worker_and_batches(private_db: str) -> None:
    dsn = sqlalchemy_to_dsn(private_db)
    slug = _queue(private_db, None, slice(0, 28))
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        drain(conn, side, WorkerConfig(name="first"))
        (project_id,) = conn.execute(  # type: ignore[misc]
            "SELECT id FROM project WHERE slug = %s", (slug,)
        ).fetchone()
        conn.commit()
    # The worker dies waiting for the project's pipelines after its ingest committed.
    _queue(private_db, slug, slice(28, 29))
    _kill_before_the_push(private_db, project_id)
    forget_all()
    with psycopg.connect(dsn) as conn:
        assert retry_backlog(conn) >= 1
        assert conn.execute("SELECT count(*) FROM change_backlog").fetchone() == (0,)
    # Killed again; then the next uploads take the older mark first, one by one.
    _queue(private_db, slug, slice(29, 30))
    _kill_before_the_push(private_db, project_id)
    _queue(private_db, slug, slice(30, 36))
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        while process_next(conn, side, WorkerConfig(name="after")) is not None:
            pass
    # The rest in batches of up to four uploads per ingest transaction.
    _queue(private_db, slug, slice(36, None))
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        drain(conn, side, WorkerConfig(name="batched", batch_uploads=4))
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM change_backlog").fetchone() == (0,)
        series = dict(
            conn.execute(
                "SELECT key, count FROM pipeline_series WHERE project_id = %s", (project_id,)
            ).fetchall()
        )
        stored = sorted(
            conn.execute(
                "SELECT key, position, run_id_before, run_id_after, commit_after, "
                "median_before_s, median_after_s FROM duration_change "
                "WHERE project_id = %s AND kind = 'pipeline'",
                (project_id,),
            ).fetchall()
        )
    pushed = _pushed(dsn, project_id)
    assert pushed["pipeline"].tolist() == [f"p-{i}" for i in range(PIPELINES)]
    assert pushed["pushed"].all()
    assert (pushed["jobs"] == len(JOBS)).all()
    assert series == {"wall": PIPELINES, "machine": PIPELINES}  # one point each, no more
    # The stored changes are a from-scratch detection over the pushed points.
    want = []
    for key, column in (("machine", "machine_s"), ("wall", "wall_s")):
        frame = pd.DataFrame(
            {
                "run_id": pushed["run"].to_numpy(dtype=np.int64),
                "commit": "",
                "started_at": pd.Timestamp("2026-01-01", tz="UTC"),
                "duration_s": pushed[column].astype(float),
            }
        )
        for c in detect_changes(frame):
            want.append((key, c.index, c.run_id_before, c.run_id_after))
    assert [s[:4] for s in stored] == sorted(want)
    assert {s[0] for s in stored} == {"wall", "machine"}
    assert {s[4] for s in stored} == {commit_of(STEP_AT)}


def test_a_pipeline_change_series_is_its_pipelines_points(
    live_server: LiveServer, stepped: ProjectFixture
) -> None:
    for change in _get(live_server, stepped, kind="pipeline").json()["changes"]:
        response = httpx.get(
            f"{live_server.url}/api/v1/projects/{stepped.slug}/changes/{change['id']}/series",
            headers={"Authorization": f"Bearer {stepped.read_token}"},
        )
        assert response.status_code == 200, response.text
        points = response.json()["points"]
        shown = range(max(0, STEP_AT - 40), min(PIPELINES, STEP_AT + 40))
        assert [p["commit"] for p in points] == [commit_of(i) for i in shown]
        assert [p["after"] for p in points] == [i >= STEP_AT for i in shown]
        which = 0 if change["name"] == NAMES["wall"] else 1
        want = [_want_point(f"p-{i}")[which] for i in shown]
        assert [p["duration_s"] for p in points] == pytest.approx(want)
