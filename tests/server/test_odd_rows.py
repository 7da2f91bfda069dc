"""One odd report never disables a feature for its project.

pytest writes `<testcase time="0.001"/>` with neither classname nor name when SIGINT stops a
run (a CI timeout). After one such report every split, shard and machines answer of the
project was a 422 carrying a pandas message (`Length of values (69) does not match length of
index (68)`). Here a real server stores complete runs, then an interrupted run with nameless,
duplicate and half-named testcases; every project route must answer 200 with sane content,
and the upload must carry a warning that names the rows left out.
"""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine, text

from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.server.test_upload_flow import upload, wait_done

FILES = 12
TESTS_PER_FILE = 6  # 72 tests, like the report the issue was seen with


def _case(classname: str, name: str, seconds: float) -> str:
    return f'<testcase classname="{classname}" name="{name}" time="{seconds:.3f}"/>'


def complete_run(seed: int) -> bytes:
    """A pytest JUnit report of FILES x TESTS_PER_FILE passing tests."""
    cases = [
        _case(f"tests.test_m{f:02d}", f"test_{t}", 0.5 + f * 0.7 + t * 0.1 + seed * 0.01)
        for f in range(FILES)
        for t in range(TESTS_PER_FILE)
    ]
    return _suite(cases)


def interrupted_run() -> bytes:
    """What pytest writes when SIGINT stops the run: the first tests, a duplicate, and the
    interrupted testcase(s) with no classname and no name (also an empty name, and a name
    with no classname)."""
    cases = [_case(f"tests.test_m{f:02d}", "test_0", 1.0 + f) for f in range(FILES - 1)]
    cases.append(_case("tests.test_m00", "test_0", 0.7))  # a duplicate of a pytest nodeid
    cases.append('<testcase time="0.001"/>')  # SIGINT
    cases.append('<testcase time="0.002"/>')
    cases.append('<testcase classname="" name="" time="0.003"/>')
    cases.append('<testcase classname="tests.test_m01" name="" time="0.004"/>')
    return _suite(cases)


def _suite(cases: list[str]) -> bytes:
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" '
        f'tests="{len(cases)}" time="99.0" timestamp="2026-01-01T00:00:00" hostname="ci">'
        + "".join(cases)
        + "</testsuite></testsuites>"
    ).encode()


@pytest.fixture(scope="module")
def interrupted(live_server: LiveServer, engine: Engine) -> tuple[ProjectFixture, dict]:  # type: ignore[type-arg]
    """A public project with three complete runs and one interrupted run; the last upload."""
    project = make_project(engine, public=True)
    last: dict = {}  # type: ignore[type-arg]
    bodies = [complete_run(0), complete_run(1), interrupted_run(), complete_run(2)]
    for index, body in enumerate(bodies):
        response = upload(
            live_server, project.upload_token, [("junit.xml", body)], job="unit",
            commit=f"c{index}", pipeline=f"p{index}", machine="ubuntu-latest",
        )  # fmt: skip
        assert response.status_code == 202, response.text
        doc = wait_done(live_server, project.upload_token, response.json()["id"])
        assert doc["status"] == "done", doc
        if index == 2:
            last = doc
    return project, last


def test_the_upload_names_the_rows_it_left_out(
    interrupted: tuple[ProjectFixture, dict],  # type: ignore[type-arg]
    engine: Engine,
) -> None:
    project, doc = interrupted
    warnings = " ".join(str(w) for w in doc.get("warnings") or [])
    assert "4 result(s) with no test name left out" in warnings, doc
    # The warning names the rows, so the user can find them in the report.
    assert 'testcase 13 (time="0.001")' in warnings, warnings
    assert 'testcase 16 (time="0.004")' in warnings, warnings
    with engine.connect() as conn:
        odd = conn.execute(
            text(
                "SELECT count(*) FROM test_case WHERE project_id = :p "
                "AND (nodeid = '' OR nodeid NOT LIKE 'tests/test_m%')"
            ),
            {"p": project.id},
        ).scalar_one()
    assert odd == 0


API = (
    ("rollups", {}),
    ("rollups", {"by": "test"}),
    ("pipelines", {}),
    ("jobs", {}),
    ("trend", {}),
    ("recommendations/split", {}),
    ("recommendations/split", {"granularity": "test", "jobs": "3"}),
    ("shards", {"total": "3"}),
    ("shards", {"total": "3", "index": "2"}),
    ("recommendations/parametrize", {}),
    ("recommendations/matrix", {}),
    ("recommendations/machines", {}),
    ("recommendations/machines", {"split_jobs": "2-3"}),
    ("recommendations/accuracy", {}),
)


@pytest.mark.parametrize(("route", "params"), API, ids=[f"{r}{p}" for r, p in API])
def test_every_api_route_still_answers(
    live_server: LiveServer,
    interrupted: tuple[ProjectFixture, dict],  # type: ignore[type-arg]
    route: str,
    params: dict[str, str],
) -> None:
    project, _ = interrupted
    response = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/{route}",
        params={"days": "3650", **params},
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=120,
    )
    assert response.status_code == 200, response.text[:800]
    assert "Length of values" not in response.text


def test_shards_cover_every_named_test_exactly_once(
    live_server: LiveServer,
    interrupted: tuple[ProjectFixture, dict],  # type: ignore[type-arg]
) -> None:
    project, _ = interrupted
    seen: list[str] = []
    for index in (1, 2, 3):
        response = httpx.get(
            f"{live_server.url}/api/v1/projects/{project.slug}/shards",
            params={"total": "3", "index": str(index), "days": "3650"},
            headers={"Authorization": f"Bearer {project.read_token}"},
            timeout=120,
        )
        assert response.status_code == 200, response.text[:800]
        doc = response.json()
        (shard,) = doc["shards"]
        seen += shard["nodeids"]
    expected = [f"tests/test_m{f:02d}.py::test_{t}" for f in range(FILES) for t in range(6)]
    assert sorted(seen) == sorted(expected)


def test_split_plan_counts_the_named_tests(
    live_server: LiveServer,
    interrupted: tuple[ProjectFixture, dict],  # type: ignore[type-arg]
) -> None:
    project, _ = interrupted
    response = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/rollups",
        params={"by": "test", "days": "3650", "limit": "1000"},
        headers={"Authorization": f"Bearer {project.read_token}"},
    )
    assert response.status_code == 200, response.text[:800]
    keys = [row["key"] for row in response.json()["rows"]]
    assert len(keys) == FILES * TESTS_PER_FILE
    assert all(k.startswith("tests/test_m") for k in keys)


PAGES = ("", "/time", "/recommendations", "/reductions", "/recommendations/accuracy", "/flaky")


@pytest.mark.parametrize("tab", PAGES)
def test_every_page_still_shows(
    live_server: LiveServer,
    interrupted: tuple[ProjectFixture, dict],  # type: ignore[type-arg]
    tab: str,
) -> None:
    project, _ = interrupted
    page = httpx.get(f"{live_server.url}/p/{project.slug}{tab}?days=3650", timeout=120)
    assert page.status_code == 200, page.text[:800]
    assert "Length of values" not in page.text
    assert "does not match length" not in page.text


@pytest.fixture(scope="module")
def stored_before(live_server: LiveServer, engine: Engine) -> ProjectFixture:
    """A project whose tables hold a nameless test case, as stored before parsers left them out
    (renamed to "" in place), and one whose nodeid ends in "::" (a test with an empty name)."""
    project = make_project(engine, public=True)
    for index in range(3):
        response = upload(
            live_server, project.upload_token, [("junit.xml", complete_run(index))],
            job="unit", commit=f"c{index}", pipeline=f"p{index}", machine="ubuntu-latest",
        )  # fmt: skip
        assert response.status_code == 202, response.text
        assert wait_done(live_server, project.upload_token, response.json()["id"])["status"] == (
            "done"
        )
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE test_case SET nodeid = CASE nodeid "
                "WHEN 'tests/test_m03.py::test_1' THEN '' "
                "WHEN 'tests/test_m04.py::test_2' THEN 'tests/test_m04.py::' END "
                "WHERE project_id = :p AND nodeid IN "
                "('tests/test_m03.py::test_1', 'tests/test_m04.py::test_2')"
            ),
            {"p": project.id},
        )
    return project


@pytest.mark.parametrize(("route", "params"), API, ids=[f"{r}{p}" for r, p in API])
def test_nameless_rows_stored_before_are_left_out_of_every_answer(
    live_server: LiveServer, stored_before: ProjectFixture, route: str, params: dict[str, str]
) -> None:
    response = httpx.get(
        f"{live_server.url}/api/v1/projects/{stored_before.slug}/{route}",
        params={"days": "3650", **params},
        headers={"Authorization": f"Bearer {stored_before.read_token}"},
        timeout=120,
    )
    assert response.status_code == 200, response.text[:800]
    if route == "shards" and "index" not in params:
        nodeids = [n for shard in response.json()["shards"] for n in shard["nodeids"]]
        # The blank one is no test; one ending in "::" is (pytest names an item collected
        # with an empty name so): it is sharded like any other, once.
        assert len(nodeids) == len(set(nodeids)) == FILES * TESTS_PER_FILE - 1
        assert "tests/test_m04.py::" in nodeids
        assert all(n.startswith("tests/test_m") for n in nodeids)


@pytest.mark.parametrize("tab", PAGES)
def test_pages_of_a_project_with_nameless_rows_stored_before(
    live_server: LiveServer, stored_before: ProjectFixture, tab: str
) -> None:
    page = httpx.get(f"{live_server.url}/p/{stored_before.slug}{tab}?days=3650", timeout=120)
    assert page.status_code == 200, page.text[:800]
    assert "does not match length" not in page.text


def test_infinite_and_huge_times_never_blank_the_project_figures(
    live_server: LiveServer, engine: Engine
) -> None:
    """`time="inf"` or `"1e308"` was stored as 1.8e308 s; grand_total_s
    became null and every share 0.0. Out of range is unknown and left out of every sum."""
    project = make_project(engine)
    cases = [
        _case("tests.test_a", "test_ok", 2.0),
        '<testcase classname="tests.test_a" name="test_inf" time="inf"/>',
        '<testcase classname="tests.test_a" name="test_huge" time="1e308"/>',
        '<testcase classname="tests.test_b" name="test_week" time="700000"/>',
        _case("tests.test_b", "test_ok", 1.0),
    ]
    response = upload(live_server, project.upload_token, [("junit.xml", _suite(cases))])
    assert response.status_code == 202, response.text
    doc = wait_done(live_server, project.upload_token, response.json()["id"])
    assert doc["status"] == "done", doc
    (warning,) = [w for w in doc["warnings"] if "outside" in str(w)]
    assert "testcase time: 3 value(s) outside 0 s .. 7 days (inf s, 1e+308 s, 700000 s)" in str(
        warning
    )
    rollup = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/rollups",
        params={"by": "file", "days": "3650"},
        headers={"Authorization": f"Bearer {project.read_token}"},
    ).json()
    assert rollup["grand_total_s"] == pytest.approx(3.0)
    shares = {row["key"]: row["share"] for row in rollup["rows"]}
    assert shares == {
        "tests/test_a.py": pytest.approx(2 / 3),
        "tests/test_b.py": pytest.approx(1 / 3),
    }
