"""A mixed fleet: pytest, Jest and Maven jobs in one project. Each job is shown in its own
terms (files, spec paths, derived Java paths), no time falls into `(unknown)`, the rollups by
file and by job add up to the same total, and each runner's cell is planned in its words."""

from __future__ import annotations

import math

import httpx
import pytest

from tests.conftest import LiveServer, ProjectFixture
from tests.server.test_upload_flow import upload, wait_done

PYTEST = (
    b'<testsuites><testsuite name="pytest">'
    b'<testcase classname="tests.test_cart" name="test_add" file="tests/test_cart.py" time="3"/>'
    b'<testcase classname="tests.test_cart" name="test_rm" file="tests/test_cart.py" time="2"/>'
    b'<testcase classname="tests.test_user" name="test_new" file="tests/test_user.py" time="1"/>'
    b"</testsuite></testsuites>"
)
JEST = (
    b'<testsuites name="jest tests">'
    b'<testsuite name="src/cart.test.js"><testcase classname="cart adds" name="cart adds" '
    b'time="2"/><testcase classname="cart totals" name="cart totals" time="1"/></testsuite>'
    b'<testsuite name="src/user.test.js"><testcase classname="user" name="user" time="2.5"/>'
    b"</testsuite></testsuites>"
)
MAVEN = (
    b'<testsuite name="com.acme.CartTest">'
    b'<properties><property name="surefire.version" value="3.2.5"/></properties>'
    b'<testcase classname="com.acme.CartTest" name="adds" time="6"/>'
    b'<testcase classname="com.acme.CartTest" name="totals" time="2"/>'
    b'<testcase classname="com.acme.UserTest" name="creates" time="1"/>'
    b"</testsuite>"
)
JOBS = {
    "python": (
        "pytest.xml",
        PYTEST,
        "pytest",
        {"tests/test_cart.py": 5.0, "tests/test_user.py": 1.0},
    ),
    "js": ("jest.xml", JEST, "jest", {"src/cart.test.js": 3.0, "src/user.test.js": 2.5}),
    "java": (
        "TEST-com.acme.CartTest.xml",
        MAVEN,
        "maven",
        {"src/test/java/com/acme/CartTest.java": 8.0, "src/test/java/com/acme/UserTest.java": 1.0},
    ),
}


def test_mixed_fleet(live_server: LiveServer, project: ProjectFixture) -> None:
    for lang, (name, body, _, _) in JOBS.items():
        answer = upload(
            live_server,
            project.upload_token,
            [(name, body)],
            job=f"test-{lang}",
            label=f"lang={lang}",
        )
        assert answer.status_code == 202, answer.text
        assert wait_done(live_server, project.upload_token, answer.json()["id"])["status"] == "done"
    base = f"{live_server.url}/api/v1/projects/{project.slug}"
    auth = {"Authorization": f"Bearer {project.read_token}"}

    by_file = httpx.get(f"{base}/rollups", params={"by": "file"}, headers=auth, timeout=60).json()
    files = {row["key"]: row["total_s"] for row in by_file["rows"]}
    expected = {f: s for _, _, _, per_file in JOBS.values() for f, s in per_file.items()}
    assert files == pytest.approx(expected)
    assert "(unknown)" not in files
    by_job = httpx.get(f"{base}/rollups", params={"by": "job"}, headers=auth, timeout=60).json()
    jobs = {row["key"]: row["total_s"] for row in by_job["rows"]}
    total = math.fsum(expected.values())
    assert math.fsum(jobs.values()) == pytest.approx(total)
    assert math.fsum(files.values()) == pytest.approx(total)
    assert by_file["grand_total_s"] == pytest.approx(total)

    for lang, (_, _, runner, per_file) in JOBS.items():
        plan = httpx.get(
            f"{base}/recommendations/split",
            params={"jobs": "2", "overhead": "0", "cell": f"lang={lang}"},
            headers=auth,
            timeout=60,
        ).json()
        assert plan["verdict"] == "split", plan
        assert plan["config"]["runner"] == runner
        commands = " ".join(job["command"] for job in plan["jobs"])
        if runner == "maven":
            assert "-Dtest=com.acme.CartTest" in commands
        elif runner == "pytest":  # the heavy file split by test; the default job --deselects
            assert all(j["command"].startswith("python -m pytest ") for j in plan["jobs"])
            assert "--deselect" in commands
        else:
            assert all(f in commands for f in per_file), (runner, commands)
