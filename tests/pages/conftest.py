"""A small hand-built history, stored once per session, that every page test reads.

Numbers the tests check, by hand (two pipelines, each with a cpu and a gpu job):
  cpu run: test_augmix[a] 30 s (setup 1, call 28, teardown 1), test_augmix[b] 10 s,
           test_resize 10 s, test_resnet 50 s (slow)  -> 100 s of tests, wall 130 s
  gpu run: test_resnet 150 s (slow)                   -> 150 s of tests, wall 300 s
  per pipeline: wait 300 s (gpu), machine 430 s, setup (30 + 150) / 430 = 41.9%
  all tests: 2 x 250 = 500 s; test_models.py 400 s (80.0%), test_transforms.py 100 s (20.0%)
  test_augmix is 80 of the file's 100 s (80.0%); [a] is 60 of its 80 s (75.0%)
  job=cpu only: 200 s, test_models.py 100 s (50.0%)
In the second pipeline test_augmix[a] passed on its second attempt (flaky).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import lxml.html  # type: ignore[import-untyped]
import psycopg
import pytest
from sqlalchemy import Engine

from ingest.merge import MergedRun
from ingest.model import SessionInfo, results_frame
from ingest.store import RunMetadata, store_run
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.server.test_upload_flow import upload, wait_done

AUGMIX_A = "tests/test_transforms.py::test_augmix[a]"
AUGMIX_B = "tests/test_transforms.py::test_augmix[b]"
RESIZE = "tests/test_transforms.py::test_resize"
RESNET = "tests/test_models.py::test_resnet"


def result_row(nodeid: str, duration_s: float, **extra: Any) -> dict[str, Any]:
    """One result row, its file/function/params split from the nodeid."""
    file, _, name = nodeid.partition("::")
    function, _, params = name.partition("[")
    return {
        "nodeid": nodeid,
        "file": file,
        "function": function,
        "params": params.rstrip("]") or None,
        "markers": ["slow"] if "models" in file else [],
        "outcome": "passed",
        "duration_s": duration_s,
        "setup_s": extra.pop("setup_s", 0.0),
        "call_s": extra.pop("call_s", duration_s),
        "teardown_s": extra.pop("teardown_s", 0.0),
        **extra,
    }


def cpu_rows(*, flaky: bool) -> list[dict[str, Any]]:
    """The cpu job's results."""
    return [
        result_row(
            AUGMIX_A,
            30.0,
            setup_s=1.0,
            call_s=28.0,
            teardown_s=1.0,
            flaky=flaky,
            attempts=2 if flaky else 1,
            message="timeout on first attempt" if flaky else None,
        ),
        result_row(AUGMIX_B, 10.0),
        result_row(RESIZE, 10.0),
        result_row(RESNET, 50.0),
    ]


def store_rows(
    conn: psycopg.Connection[Any],
    project_id: int,
    rows: list[dict[str, Any]],
    *,
    job: str,
    pipeline: str,
    started_at: datetime,
    wall_s: float,
    branch: str = "main",
    labels: dict[str, str] | None = None,
) -> None:
    """Store one run through the real ingest path (an upload row, then store_run); the run's
    labels default to `device=<job>`."""
    metadata = {"job": job, "pipeline": pipeline, "source": "page-tests"}
    upload_id = conn.execute(
        "INSERT INTO upload (project_id, status, metadata, job, content_hash, finished_at) "
        "VALUES (%s, 'done', %s, %s, %s, now()) RETURNING id",
        (project_id, json.dumps(metadata), job, f"{pipeline}/{job}".encode()),
    ).fetchone()
    assert upload_id is not None
    columns = {key: [r.get(key) for r in rows] for key in rows[0]}
    columns["flaky"] = [bool(r.get("flaky", False)) for r in rows]
    columns["attempts"] = [int(r.get("attempts", 1)) for r in rows]
    store_run(
        conn,
        project_id=project_id,
        upload_id=int(upload_id[0]),
        meta=RunMetadata(
            job=job,
            pipeline=pipeline,
            commit=f"c0ffee{pipeline}",
            branch=branch,
            machine="linux-large",
            labels={"device": job} if labels is None else labels,
            started_at=started_at,
            wall_s=wall_s,
        ),
        merged=MergedRun(results=results_frame(columns), session=SessionInfo(xdist_workers=1)),
    )
    # The store's staging tables empty on commit: one transaction per run, as the worker does.
    conn.commit()


def store_history(dsn: str, project_id: int) -> None:
    """The two pipelines described in the module docstring."""
    now = datetime.now(UTC).replace(microsecond=0)
    with psycopg.connect(dsn) as conn:
        for index, started in enumerate((now - timedelta(days=1), now - timedelta(hours=1))):
            pipeline = f"p{index + 1}"
            store_rows(
                conn,
                project_id,
                cpu_rows(flaky=index == 1),
                job="cpu",
                pipeline=pipeline,
                started_at=started,
                wall_s=130.0,
            )
            store_rows(
                conn,
                project_id,
                [result_row(RESNET, 150.0)],
                job="gpu",
                pipeline=pipeline,
                started_at=started + timedelta(seconds=5),
                wall_s=300.0,
            )


@dataclass(frozen=True)
class Site:
    """The live server and the projects the page tests read."""

    url: str
    private: ProjectFixture
    public: ProjectFixture
    failed_upload_id: int


@pytest.fixture(scope="session")
def site(live_server: LiveServer, database: Database, engine: Engine) -> Site:
    """A private and a public project holding the same history; the private one also has a
    failed upload."""
    private = make_project(engine)
    public = make_project(engine, public=True)
    for project in (private, public):
        store_history(database.dsn, project.id)
    response = upload(live_server, private.upload_token, [("broken.xml", b"<testsuite><oops")])
    assert response.status_code == 202, response.text
    failed = wait_done(live_server, private.upload_token, response.json()["id"])
    assert failed["status"] == "failed", failed
    return Site(url=live_server.url, private=private, public=public, failed_upload_id=failed["id"])


def sign_in_form(client: httpx.Client) -> dict[str, str]:
    """The hidden fields of the sign-in form (its CSRF token); the client keeps the cookie."""
    form = client.get("/signin")
    assert form.status_code == 200, form.text[:300]
    doc = lxml.html.fromstring(form.text)
    return {
        i.get("name"): i.get("value") or ""
        for i in doc.cssselect('form.stack input[type="hidden"]')
    }


@cache
def session_cookies(url: str, token: str) -> dict[str, str]:
    """The cookies of a browser signed in with `token` through the real sign-in form."""
    with httpx.Client(base_url=url, timeout=60) as client:
        fields = sign_in_form(client)
        response = client.post("/signin", data={**fields, "token": token})
        assert response.status_code == 303, response.text[:300]
        return dict(client.cookies)


# ------------------------------------------------------------------- real Chromium

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One Chromium for the whole session."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail("Chromium is missing: apt-get install -y chromium")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class Watched:
    """A page plus everything that went wrong while it was used."""

    page: object
    problems: list[str] = field(default_factory=list)


def watch(context: object, base_url: str) -> Watched:
    page = context.new_page()  # type: ignore[attr-defined]
    watched = Watched(page)
    page.on(
        "console",
        lambda m: (
            watched.problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )
    page.on("pageerror", lambda e: watched.problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: watched.problems.append(f"failed: {r.url} {r.failure}"))

    def on_response(response: object) -> None:
        status = response.status  # type: ignore[attr-defined]
        if status >= 400:
            watched.problems.append(f"HTTP {status}: {response.url}")  # type: ignore[attr-defined]

    page.on("response", on_response)

    def local_only(route: object) -> None:
        # Everything must come from the app itself: the pages work with no internet.
        url = route.request.url  # type: ignore[attr-defined]
        if url.startswith(base_url):
            route.continue_()  # type: ignore[attr-defined]
        else:
            watched.problems.append(f"off-site: {url}")
            route.abort()  # type: ignore[attr-defined]

    page.route("**/*", local_only)
    return watched
