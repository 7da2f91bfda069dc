"""A bounded schemathesis run over the live server's OpenAPI: no input answers a
5xx, every answer matches the schema of its status, and every status answered is documented.

Every operation of /openapi.json is exercised with valid (positive) and invalid (negative)
input, with an admin token (every scope) of a project that holds a little data (see PASSES
for the slug in the path). Nothing is excluded. Bounded: EXAMPLES cases per operation and mode,
no shrinking (a failure is recorded with the request that caused it, not minimised).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis.strategies import SearchStrategy
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy import Engine

from app.db.changes import set_default_branch
from app.db.projects import create_token, get_project, issue_token
from tests.changes_history import upload_step_history
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.server.test_rollup_api import junit
from tests.server.test_upload_flow import upload, wait_done

# (generation mode, the project's own slug in the path?): valid input that reaches the
# planners, invalid query/body on the real project (not stopped at a 404 for the slug), and
# generated slugs (NUL, unicode, long) with valid input.
PASSES = (
    (GenerationMode.POSITIVE, True),
    (GenerationMode.NEGATIVE, True),
    (GenerationMode.POSITIVE, False),
)
EXAMPLES = 12
# What every answer is held to: a 5xx is a bug; the body must match the schema of its status
# and media type; an undocumented status is a schema that lies by omission.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def rich(live_server: LiveServer, engine: Engine) -> ProjectFixture:
    """A project whose every read answers 200 with rows, so every answer model meets data:
    one pipeline on two OSes (same commit: matrix evidence), machine types the shipped github
    catalogue knows (sizing), a parametrized test (explosions), mac three times slower."""
    project = make_project(engine)
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0).isoformat()
    for os_name, machine, slower in (
        ("linux", "ubuntu-latest", 1.0),
        ("macos", "macos-latest", 3.0),
    ):
        cases = [("tests.test_a", f"t{i}", (2.0 + i) * slower, "passed") for i in range(4)]
        cases += [
            ("tests.test_p", f"test_param[{x}-{n}]", n * slower, "passed")
            for x in ("x", "y")
            for n in (1, 2)
        ]
        response = upload(
            live_server,
            project.upload_token,
            [(f"{os_name}.xml", junit(cases))],
            job=f"test-{os_name}",
            pipeline="pipe-1",
            commit="c0ffee",
            branch="main",
            machine=machine,
            label=[f"os={os_name}"],
            wall_s=str(40 * slower),
            peak_rss_mib="900",
            started_at=today,
        )
        assert response.status_code == 202, response.text
        done = wait_done(live_server, project.upload_token, response.json()["id"])
        assert done["status"] == "done", done
    # A declared catalogue: GET /catalogue then answers the catalogue itself.
    declared = httpx.put(
        f"{live_server.url}/api/v1/projects/{project.slug}/catalogue",
        json={"name": "github"},
        headers={"Authorization": f"Bearer {project.admin_token}"},
        timeout=30,
    )
    assert declared.status_code == 200, declared.text
    return project


@dataclass(frozen=True)
class ServerError:
    """One answer that failed a check, and the request that caused it."""

    operation: str
    status: int
    curl: str
    body: str
    failure: str


def exercise(
    strategy: SearchStrategy[Any],
    pass_name: str,
    server: LiveServer,
    session: requests.Session,
    headers: dict[str, str],
    seen: set[tuple[str, str]],
    errors: list[ServerError],
) -> None:
    """Send EXAMPLES generated requests; record which operations were reached and any 5xx."""

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        response = case.call(base_url=server.url, session=session, timeout=60)
        seen.add((case.operation.label, pass_name))
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (Exception, BaseExceptionGroup) as failure:  # Failure(s): record, go on
            curl = case.as_curl_command(headers=headers)
            errors.append(
                ServerError(
                    case.operation.label,
                    response.status_code,
                    curl,
                    response.text[:300],
                    str(failure)[:600],
                )
            )

    run()


@pytest.mark.slow
def test_generated_requests_answer_as_the_schema_says(
    live_server: LiveServer,
    rich: ProjectFixture,
) -> None:
    schema = schemathesis.openapi.from_url(f"{live_server.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 10, [op.label for op in operations]
    headers = {"Authorization": f"Bearer {rich.admin_token}"}
    errors: list[ServerError] = []
    seen: set[tuple[str, str]] = set()
    unsatisfiable: set[str] = set()
    with requests.Session() as session:
        for operation in operations:
            has_slug = "{slug}" in operation.path
            for mode, own_slug in PASSES:
                if not has_slug and not own_slug:
                    continue  # no slug to generate: the first two passes cover it
                strategy = operation.as_strategy(
                    generation_mode=mode,
                    headers=headers,
                    path_parameters={"slug": rich.slug} if has_slug and own_slug else None,
                )
                pass_name = f"{mode}{'' if own_slug else '-slug'}"
                try:
                    exercise(strategy, pass_name, live_server, session, headers, seen, errors)
                except Unsatisfiable:
                    # Only when nothing about the operation can be made invalid (e.g. GET with
                    # one unconstrained path string): then there is no negative case to send.
                    assert mode is GenerationMode.NEGATIVE, operation.label
                    unsatisfiable.add(operation.label)
    report = "\n".join(
        f"{e.status} {e.operation}: {e.curl}\n    {e.body}\n    {e.failure}" for e in errors
    )
    assert not errors, f"{len(errors)} failed answers:\n{report}"
    # Every operation was called with valid input, and with invalid input unless none exists
    # (a strategy that could not generate would otherwise pass silently).
    labels = {op.label for op in operations}
    assert {label for label, name in seen if name == "positive"} == labels
    assert {label for label, name in seen if name == "negative"} | unsatisfiable == labels
    # The two parameterless probes (/healthz, /readyz) and at most four GETs of one path
    # string (the catalogue, the token, the webhook and the quarantine lists).
    assert len(unsatisfiable) <= 6, unsatisfiable


# The schemathesis CLI with every check it has (positive data accepted, negative data
# rejected, Allow headers, missing auth, ...) and its stateful phase, bounded in examples and
# time. The slug is the rich project's, so requests reach the routes rather than a 404.
CLI_EXAMPLES = 8
# Coverage and fuzzing of 48 operations take 70-75 s on a loaded 2-core machine: the stateful
# phase, last, needs the rest to reach the queue's claim routes through their links.
CLI_MAX_TIME_S = 120
# Every warning schemathesis shows by default but `validation_mismatch` ("most generated data
# rejected with 422"): the documented 422s accepted below (no results in the window, a rule
# across fields such as a job range's ends) are most of what some planners answer to generated
# input, by design, and which operations cross the threshold changes from run to run. A
# warning shown makes the run fail below (no "No issues found").
WARNINGS_SHOWN = [
    "missing_auth",
    "missing_test_data",
    "base_url_mismatch",
    "missing_deserializer",
    "unused_openapi_auth",
    "unsupported_regex",
    "method_not_allowed",
    "constants_extraction",
    "unmatched_filter",
    "unresolvable_reference",
    "rate_limited",
    "dictionary_mismatch",
    "timeout_units",
]


SHOWN_BUT_MISSING_DATA = [w for w in WARNINGS_SHOWN if w != "missing_test_data"]


@pytest.mark.slow
def test_schemathesis_cli_every_check_and_stateful_pass_clean(
    live_server: LiveServer, rich: ProjectFixture, tmp_path: Path, engine: Engine
) -> None:
    config = tmp_path / "schemathesis.toml"
    # A lasting step in the rich project (another job, so the reads above keep their data):
    # the change-state route then meets a change of the project, not a 404 every time.
    # The generated requests of the test above may have named another watched branch
    # (PUT .../default-branch) and revoked the project's tokens (DELETE .../tokens/{id}):
    # main again and fresh tokens, made in the database, so the step is watched and sent.
    with engine.begin() as conn:
        set_default_branch(conn, rich.id, "main")
        found = get_project(conn, rich.slug)
        assert found is not None
        fresh = {s: create_token(conn, found, s) for s in ("upload", "read", "admin")}
        # The one token DELETE .../tokens/{token_id} may revoke: a drawn or linked id once
        # revoked the CLI's own admin token, and every later request answered 401.
        spare = issue_token(conn, found, "read")[0].id
    rich = dataclasses.replace(
        rich,
        upload_token=fresh["upload"],
        read_token=fresh["read"],
        admin_token=fresh["admin"],
    )
    upload_step_history(live_server, rich, job="steps")
    changes = httpx.get(
        f"{live_server.url}/api/v1/projects/{rich.slug}/changes",
        headers={"Authorization": f"Bearer {rich.read_token}"},
        timeout=60,
    ).json()["changes"]
    assert changes, "the step history made no change"
    # And the pipeline's queue, so its status route answers from data.
    opened = httpx.post(
        f"{live_server.url}/api/v1/projects/{rich.slug}/queues",
        headers={"Authorization": f"Bearer {rich.upload_token}"},
        json={"node": "1", "pipeline": "pipe-1", "collected": ["tests/test_a.py::t0"]},
        timeout=60,
    )
    assert opened.status_code == 200, opened.text
    # A well-formed request the data cannot answer (no results in the window, no such cell or
    # catalogue) or a rule across fields (a job range's ends, a date's years) is a documented
    # 422 (docs/errors.md), and so is a documented 409 for a resource whose state does not
    # allow the request (retrying an upload that has not failed, in the stateful phase): the
    # schema cannot say either, so they are accepted answers here.
    config.write_text(
        # The rich project's pipeline: compare answers from data rather than a 404 every time.
        f'[parameters]\n"path.slug" = "{rich.slug}"\n"query.pipeline" = "pipe-1"\n'
        f'"path.change_id" = {changes[0]["id"]}\n"path.token_id" = {spare}\n'
        "[generation]\nallow-x00 = false\n"
        "[checks.positive_data_acceptance]\n"
        'expected-statuses = ["2xx", "401", "403", "404", "409", "422"]\n'
        f"[warnings]\ndisplay = {WARNINGS_SHOWN!r}\n"
        # The upload form's negative fuzzing: schemathesis judges a multipart body "as sent"
        # only without file parts, so a mutated text field (commit `false`, sent as the text
        # "false", a valid commit) is reported as accepted invalid data. Its coverage phase
        # still sends every field's invalid values (started_at, numbers, runner...).
        '[[operations]]\ninclude-path = "/api/v1/uploads"\ninclude-method = "POST"\n'
        '[operations.phases.fuzzing.generation]\nmode = "positive"\n'
        # Its spare token is revoked once; every later DELETE of it is a documented 404.
        '[[operations]]\ninclude-path = "/api/v1/projects/{slug}/tokens/{token_id}"\n'
        f'include-method = "DELETE"\nwarnings = {SHOWN_BUT_MISSING_DATA!r}\n'
    )
    command = [
        str(Path(sys.executable).parent / "st"),
        "--config-file", str(config),
        "run", f"{live_server.url}/openapi.json",
        "--checks", "all",
        "--phases", "examples,coverage,fuzzing,stateful",
        "--mode", "all",
        "--max-examples", str(CLI_EXAMPLES),
        "--max-time", str(CLI_MAX_TIME_S),
        "--seed", "27",
        "--no-shrink",
        "--workers", "1",
        "--no-color",
        "--header", f"Authorization: Bearer {rich.admin_token}",
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=CLI_MAX_TIME_S + 120, cwd=tmp_path
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Stateful" in output, output[-5000:]
    assert "No issues found" in output, output[-5000:]
    # The run's own token outlived it: only the spare one was there to revoke.
    still = httpx.get(
        f"{live_server.url}/api/v1/projects/{rich.slug}/uploads",
        headers={"Authorization": f"Bearer {rich.admin_token}"},
        timeout=60,
    )
    assert still.status_code == 200, still.text
