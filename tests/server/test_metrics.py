"""/metrics against the live server and its worker: each upload moves the counters by exactly
what happened to it (accepted, duplicate, refused, failed by code, rows stored)."""

from __future__ import annotations

import httpx
from sqlalchemy import Engine

from tests.conftest import LiveServer, ProjectFixture
from tests.factories import junit_xml
from tests.server.conftest import queue_upload, serve_app
from tests.server.metrics_scrape import Samples, scrape, scrape_when
from tests.server.test_upload_flow import upload, wait_done

INGEST_COUNT = "laptime_ingest_duration_seconds_count"
UPLOAD_ROUTE = "/api/v1/uploads"


def _quiet(server: LiveServer) -> Samples:
    """A scrape taken while no upload waits or is being ingested (other tests' included)."""
    return scrape_when(
        server.url,
        lambda s: s.get("laptime_queue_depth") == 0 and s.get("laptime_uploads_ingesting") == 0,
        what="the queue drained",
    )


def _after_ingest(server: LiveServer, before: Samples, outcome: str) -> Samples:
    """The scrape once the worker has counted one more ingest with `outcome`."""
    done = before.get(INGEST_COUNT, outcome=outcome) + 1
    return scrape_when(
        server.url, lambda s: s.get(INGEST_COUNT, outcome=outcome) >= done, what="ingest counted"
    )


def _moved(after: Samples, before: Samples, name: str, **labels: str) -> float:
    return after.get(name, **labels) - before.get(name, **labels)


def test_an_upload_and_its_repeat_move_the_counters_exactly(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    report = junit_xml(7, seed=3)
    before = _quiet(live_server)
    sent = upload(live_server, project.upload_token, [("r.xml", report)])
    assert sent.status_code == 202, sent.text
    assert wait_done(live_server, project.upload_token, sent.json()["id"])["status"] == "done"
    after = _after_ingest(live_server, before, "done")

    assert _moved(after, before, "laptime_uploads_received_total") == 1
    assert _moved(after, before, "laptime_uploads_accepted_total") == 1
    assert _moved(after, before, "laptime_uploads_duplicate_total") == 0
    assert after.total("laptime_uploads_refused_total") == before.total(
        "laptime_uploads_refused_total"
    )
    assert _moved(after, before, "laptime_rows_stored_total") == 7
    assert _moved(after, before, INGEST_COUNT, outcome="done") == 1
    assert _moved(after, before, INGEST_COUNT, outcome="failed") == 0
    assert after.total("laptime_uploads_failed_total") == before.total(
        "laptime_uploads_failed_total"
    )
    # Latency by route template and status: the upload once, its status polls under one label.
    post = {"method": "POST", "route": UPLOAD_ROUTE, "status": "202"}
    assert _moved(after, before, "laptime_http_request_duration_seconds_count", **post) == 1
    poll = {"method": "GET", "route": "/api/v1/uploads/{upload_id}", "status": "200"}
    assert _moved(after, before, "laptime_http_request_duration_seconds_count", **poll) >= 1
    routes = after.labels_of("laptime_http_request_duration_seconds_count", "route")
    assert f"/api/v1/uploads/{sent.json()['id']}" not in routes

    again = upload(live_server, project.upload_token, [("r.xml", report)])
    assert again.status_code == 200, again.text
    repeat = scrape(live_server.url)
    assert _moved(repeat, after, "laptime_uploads_received_total") == 1
    assert _moved(repeat, after, "laptime_uploads_duplicate_total") == 1
    assert _moved(repeat, after, "laptime_uploads_accepted_total") == 0
    assert _moved(repeat, after, INGEST_COUNT, outcome="done") == 0


def test_a_failing_report_counts_as_failed_by_its_code(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    before = _quiet(live_server)
    sent = upload(live_server, project.upload_token, [("r.xml", b"<testsuites><testsuite>")])
    assert sent.status_code == 202, sent.text
    doc = wait_done(live_server, project.upload_token, sent.json()["id"])
    assert doc["status"] == "failed"
    code = doc["error"]["code"] if isinstance(doc.get("error"), dict) else doc["error_code"]
    after = _after_ingest(live_server, before, "failed")

    assert _moved(after, before, "laptime_uploads_failed_total", code=code) == 1
    assert (
        after.total("laptime_uploads_failed_total") - before.total("laptime_uploads_failed_total")
        == 1
    )
    assert _moved(after, before, INGEST_COUNT, outcome="failed") == 1
    assert _moved(after, before, INGEST_COUNT, outcome="done") == 0
    assert _moved(after, before, "laptime_rows_stored_total") == 0
    assert _moved(after, before, "laptime_uploads_accepted_total") == 1


def test_refused_uploads_count_by_code_under_their_route(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    before = scrape(live_server.url)
    files = [("file", ("r.xml", junit_xml(1)))]
    no_token = httpx.post(f"{live_server.url}/api/v1/uploads", files=files)
    assert no_token.status_code == 401
    bad_field = httpx.post(
        f"{live_server.url}/api/v1/uploads",
        headers={"Authorization": f"Bearer {project.upload_token}"},
        files=files,
        data={"wall_s": "-1"},
    )
    assert bad_field.status_code == 422
    nowhere = httpx.get(f"{live_server.url}/no/such/page/12345")
    assert nowhere.status_code == 404
    after = scrape(live_server.url)

    assert _moved(after, before, "laptime_uploads_received_total") == 2
    assert _moved(after, before, "laptime_uploads_refused_total", code="token-required") == 1
    assert _moved(after, before, "laptime_uploads_refused_total", code="invalid-field") == 1
    assert _moved(after, before, "laptime_uploads_accepted_total") == 0
    # The guard refused before routing; the latency is still under the route's template.
    count = "laptime_http_request_duration_seconds_count"
    assert _moved(after, before, count, method="POST", route=UPLOAD_ROUTE, status="401") == 1
    assert _moved(after, before, count, method="GET", route="unmatched", status="404") == 1


def test_pool_use_counts_checked_out_connections(live_server: LiveServer, engine: Engine) -> None:
    idle = scrape(live_server.url)
    with engine.connect():
        busy = scrape(live_server.url)
    assert busy.get("laptime_db_pool_in_use") == idle.get("laptime_db_pool_in_use") + 1
    assert scrape(live_server.url).get("laptime_db_pool_in_use") == idle.get(
        "laptime_db_pool_in_use"
    )
    assert idle.get("laptime_db_pool_capacity") >= 15  # pool_size 5 + max_overflow 10


def test_queue_gauges_are_read_from_the_database(private_db: str) -> None:
    first = queue_upload(private_db, junit_xml(2), job="a")
    queue_upload(private_db, junit_xml(3), job="b")
    with serve_app(private_db) as url:
        samples = scrape(url)
    assert first > 0
    assert samples.get("laptime_database_up") == 1
    assert samples.get("laptime_queue_depth") == 2
    assert 0 <= samples.get("laptime_queue_oldest_age_seconds") < 600
    assert samples.get("laptime_uploads_ingesting") == 0
    assert samples.get("laptime_workers", state="idle") == 0


def test_a_metrics_token_guards_the_endpoint_when_set(private_db: str) -> None:
    with serve_app(private_db, metrics_token="s3cret-metrics") as url:
        answers = {
            presented: httpx.get(
                f"{url}/metrics",
                headers={"Authorization": f"Bearer {presented}"} if presented else {},
            )
            for presented in (None, "wrong", "s3cret-metrics")
        }
    assert answers[None].status_code == 401
    assert answers[None].json()["code"] == "token-required"
    assert answers["wrong"].status_code == 401
    assert answers["wrong"].json()["code"] == "token-invalid"
    assert answers["s3cret-metrics"].status_code == 200
    assert "laptime_queue_depth" in answers["s3cret-metrics"].text
