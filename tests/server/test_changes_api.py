"""GET .../changes over a live server: the step found at ingest, its filters, its state set by
an admin (token or signed-in page form with CSRF), and the pages that show it."""

from __future__ import annotations

import json
from datetime import date

import httpx
import lxml.html  # type: ignore[import-untyped]
import pytest
from click.testing import CliRunner

from app.cli.main import cli
from tests.changes_history import SLOW, STEP_AT, commit_of, upload_step_history
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.pages.conftest import sign_in_form
from tests.server.test_golden_answers import check, normalise


@pytest.fixture(scope="module")
def stepped(live_server: LiveServer, engine: object) -> ProjectFixture:
    project = make_project(engine)  # type: ignore[arg-type]
    upload_step_history(live_server, project)
    return project


def _get(server: LiveServer, project: ProjectFixture, **params: object) -> httpx.Response:
    return httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/changes",
        params=params,  # type: ignore[arg-type]
        headers={"Authorization": f"Bearer {project.read_token}"},
    )


def test_the_step_is_listed_with_its_commits(live_server: LiveServer, stepped: ProjectFixture):
    response = _get(live_server, stepped)
    answer = response.json()
    assert response.status_code == 200, answer
    body = normalise(response.content, {stepped.slug: "<slug>"})
    check("api/changes.json", f"{response.status_code}\n".encode() + body)
    assert answer["default_branch"] == "main"
    named = {(c["kind"], c["name"]) for c in answer["changes"]}
    assert named == {("test", SLOW), ("file", "tests/test_a.py")}
    test = next(c for c in answer["changes"] if c["kind"] == "test")
    assert test["commit_after"] == commit_of(STEP_AT)
    assert test["commit_before"] == commit_of(STEP_AT - 1)
    assert test["pipeline_after"] == f"main-{STEP_AT}"
    assert test["between"] == [f"{STEP_AT:039x}e"]
    assert test["between_complete"] is True
    # The bisect list: the commit that did not run, then the first run's commit.
    assert [s["commit"] for s in test["bisect"]] == [f"{STEP_AT:039x}e", commit_of(STEP_AT)]
    assert test["bisect"][0]["command"].endswith(f"pytest {SLOW}")
    assert 0.45 < test["relative"] < 0.55
    assert test["delta_s"] == pytest.approx(test["median_after_s"] - test["median_before_s"])
    assert test["state"] == "open"
    assert test["job"] == "unit"
    assert test["branch"] == "main"


def test_filters_narrow_the_list(live_server: LiveServer, stepped: ProjectFixture) -> None:
    def names(**params: object) -> set[str]:
        response = _get(live_server, stepped, **params)
        assert response.status_code == 200, response.text
        return {c["name"] for c in response.json()["changes"]}

    both = {SLOW, "tests/test_a.py"}
    assert names(test=SLOW) == {SLOW}
    assert names(file="tests/test_a.py") == both
    assert names(file="tests/test_b.py") == set()
    assert names(kind="file") == {"tests/test_a.py"}
    assert names(job="unit") == both
    assert names(job="other") == set()
    assert names(state="open") == both
    assert names(state="resolved") == set()
    assert names(since=date.today().isoformat()) == both
    assert names(since="2999-01-01") == set()
    assert _get(live_server, stepped, state="gone").status_code == 422
    # Sizes: test_slow and its file both stepped by about 0.5 s per run, +50%.
    listed = _get(live_server, stepped).json()["changes"]
    smallest = min(abs(c["delta_s"]) for c in listed)
    largest = max(abs(c["delta_s"]) for c in listed)
    assert names(min_delta_s=smallest) == both
    assert names(min_delta_s=largest + 1e-3) == set()
    assert names(min_relative=0.4) == both
    assert names(min_relative=0.6) == set()
    assert names(min_delta_s="", min_relative="") == both  # a form's empty fields: no filter
    for bad in ("-1", "nan", "inf", "x"):
        assert _get(live_server, stepped, min_delta_s=bad).status_code == 422, bad


def test_an_admin_sets_the_state(
    live_server: LiveServer, stepped: ProjectFixture, database: Database
) -> None:
    change = next(c for c in _get(live_server, stepped, kind="file").json()["changes"])
    url = f"{live_server.url}/api/v1/projects/{stepped.slug}/changes/{change['id']}/state"

    def post(token: str, state: str, to: str = url) -> httpx.Response:
        return httpx.post(to, json={"state": state}, headers={"Authorization": f"Bearer {token}"})

    assert post(stepped.read_token, "acknowledged").status_code == 403
    done = post(stepped.admin_token, "acknowledged")
    assert done.status_code == 200, done.text
    assert done.json() == {"id": change["id"], "state": "acknowledged"}
    assert {c["name"] for c in _get(live_server, stepped, state="acknowledged").json()["changes"]}\
        == {"tests/test_a.py"}  # fmt: skip
    missing = post(stepped.admin_token, "resolved", url.replace(f"/{change['id']}/", "/999999/"))
    assert missing.status_code == 404
    assert missing.json()["code"] == "change-not-found"
    # Another project's admin cannot reach it.
    other = make_project_from(database)
    assert post(other.admin_token, "resolved").status_code == 403
    # The CLI sets it back.
    env = {"DATABASE_URL": database.url}
    runner = CliRunner()
    args = ["change-state", "--project", stepped.slug, str(change["id"]), "open"]
    printed = runner.invoke(cli, args, env=env)
    assert printed.exit_code == 0, printed.output
    assert _get(live_server, stepped, kind="file").json()["changes"][0]["state"] == "open"
    gone = runner.invoke(
        cli, ["change-state", "--project", stepped.slug, "999999", "open"], env=env
    )
    assert gone.exit_code == 1


def make_project_from(database: Database) -> ProjectFixture:
    from app.db.engine import make_engine

    engine = make_engine(database.url, pool_size=1)
    try:
        return make_project(engine)
    finally:
        engine.dispose()


def test_the_page_button_takes_a_signed_in_admin_and_csrf(
    live_server: LiveServer, stepped: ProjectFixture
) -> None:
    page_url = f"/p/{stepped.slug}/changes"
    with httpx.Client(base_url=live_server.url, timeout=60) as reader:
        fields = sign_in_form(reader)
        assert (
            reader.post("/signin", data={**fields, "token": stepped.read_token}).status_code == 303
        )
        doc = lxml.html.fromstring(reader.get(page_url).text)
        assert doc.cssselect("#changes tbody tr[data-change]")
        assert not doc.cssselect("#changes form")  # no buttons for a read token
        change_id = doc.cssselect("#changes tbody tr[data-change]")[0].get("data-change")
        refused = reader.post(
            f"{page_url}/{change_id}/state", data={"state": "resolved", "csrf": fields["csrf"]}
        )
        assert refused.status_code == 403
    with httpx.Client(base_url=live_server.url, timeout=60) as admin:
        fields = sign_in_form(admin)
        assert (
            admin.post("/signin", data={**fields, "token": stepped.admin_token}).status_code == 303
        )
        doc = lxml.html.fromstring(admin.get(page_url).text)
        form = doc.cssselect(f"#change-{change_id} form")[0]
        hidden = {i.get("name"): i.get("value") for i in form.cssselect("input[type=hidden]")}
        no_csrf = admin.post(form.get("action"), data={"state": hidden["state"]})
        assert no_csrf.status_code == 403
        sent = admin.post(form.get("action"), data=hidden)
        assert sent.status_code == 303, sent.text[:300]
        doc = lxml.html.fromstring(admin.get(page_url).text)
        state = doc.cssselect(f"#change-{change_id} [data-state]")[0].get("data-state")
        assert state == hidden["state"]
        # Put it back for the other tests of the module.
        form = next(
            f for f in doc.cssselect(f"#change-{change_id} form")
            if f.cssselect("input[name=state]")[0].get("value") == "open"
        )  # fmt: skip
        back = {i.get("name"): i.get("value") for i in form.cssselect("input[type=hidden]")}
        assert admin.post(form.get("action"), data=back).status_code == 303


def test_overview_test_and_file_pages_show_their_changes(
    live_server: LiveServer, stepped: ProjectFixture
) -> None:
    with httpx.Client(base_url=live_server.url, timeout=60) as client:
        fields = sign_in_form(client)
        client.post("/signin", data={**fields, "token": stepped.read_token})
        ids = {str(c["id"]) for c in _get(live_server, stepped).json()["changes"]}
        pages = {
            f"/p/{stepped.slug}": ids,
            f"/p/{stepped.slug}?job=unit": ids,
            f"/p/{stepped.slug}/test?nodeid={SLOW}": {
                str(c["id"]) for c in _get(live_server, stepped, test=SLOW).json()["changes"]
            },
            f"/p/{stepped.slug}/files/tests/test_a.py": ids,
            f"/p/{stepped.slug}/files/tests/test_b.py": set(),
        }
        for path, want in pages.items():
            response = client.get(path)
            assert response.status_code == 200, (path, response.text[:300])
            doc = lxml.html.fromstring(response.text)
            shown = {li.get("data-change") for li in doc.cssselect("#changes-touching li")}
            assert shown == want, path
        doc = lxml.html.fromstring(client.get(f"/p/{stepped.slug}").text)
        badge = doc.cssselect("#jobs [data-changes]")
        assert [b.get("data-changes") for b in badge] == ["2"]


def test_cli_answers_what_rest_answers(
    live_server: LiveServer, stepped: ProjectFixture, database: Database
) -> None:
    runner = CliRunner()
    env = {"DATABASE_URL": database.url}
    printed = runner.invoke(cli, ["changes", "--project", stepped.slug, "--json"], env=env)
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output) == _get(live_server, stepped).json()
    for args, params in (
        (["--min-delta", "0.3"], {"min_delta_s": 0.3}),
        (["--min-relative", "0.6"], {"min_relative": 0.6}),
    ):
        sized = runner.invoke(cli, ["changes", "--project", stepped.slug, "--json", *args], env=env)
        assert sized.exit_code == 0, sized.output
        assert json.loads(sized.output) == _get(live_server, stepped, **params).json()
    text = runner.invoke(cli, ["changes", "--project", stepped.slug, "--kind", "test"], env=env)
    assert text.exit_code == 0, text.output
    assert SLOW in text.output
    assert f"bisect: git checkout {commit_of(STEP_AT)} && pytest {SLOW}" in text.output
    assert "tests/test_a.py (" not in text.output


def test_an_admin_names_the_default_branch(
    live_server: LiveServer, stepped: ProjectFixture, database: Database
) -> None:
    url = f"{live_server.url}/api/v1/projects/{stepped.slug}/default-branch"

    def put(token: str, branch: object) -> httpx.Response:
        return httpx.put(url, json={"branch": branch}, headers={"Authorization": f"Bearer {token}"})

    assert _get(live_server, stepped).json()["default_branch"] == "main"  # detected
    assert put(stepped.read_token, "topic").status_code == 403
    named = put(stepped.admin_token, "topic")
    assert named.status_code == 200, named.text
    assert named.json() == {"override": "topic", "default_branch": "topic"}
    assert _get(live_server, stepped).json()["default_branch"] == "topic"
    assert put(stepped.admin_token, "").status_code == 422  # an empty name is no branch
    assert put(stepped.admin_token, "x" * 300).status_code == 422
    # The CLI shows it and clears it: detection again.
    env = {"DATABASE_URL": database.url}
    runner = CliRunner()
    shown = runner.invoke(cli, ["default-branch", "--project", stepped.slug], env=env)
    assert shown.exit_code == 0, shown.output
    assert "topic (set)" in shown.output
    cleared = runner.invoke(cli, ["default-branch", "--project", stepped.slug, "--clear"], env=env)
    assert cleared.exit_code == 0, cleared.output
    assert "main (detected)" in cleared.output
    assert _get(live_server, stepped).json()["default_branch"] == "main"
    assert put(stepped.admin_token, None).json() == {"override": None, "default_branch": "main"}


def test_the_page_filters_by_size_as_rest_does(
    live_server: LiveServer, stepped: ProjectFixture
) -> None:
    with httpx.Client(base_url=live_server.url, timeout=60) as client:
        fields = sign_in_form(client)
        client.post("/signin", data={**fields, "token": stepped.read_token})
        for params in (
            # What the page's own form sends with nothing typed in.
            {"state": "", "kind": "", "min_delta_s": "", "min_relative": "", "sort": "per_run"},
            {"min_relative": "0.4"},
            {"min_relative": "0.6"},
            {"min_delta_s": "0.3", "kind": "test"},
        ):
            page = client.get(f"/p/{stepped.slug}/changes", params=params)
            assert page.status_code == 200, (params, page.text[:300])
            doc = lxml.html.fromstring(page.text)
            shown = [r.get("data-change") for r in doc.cssselect("#changes tbody tr[data-change]")]
            rest = {k: v for k, v in params.items() if v}
            want = [str(c["id"]) for c in _get(live_server, stepped, **rest).json()["changes"]]
            assert shown == want, params
            typed = doc.cssselect("input[name=min_relative]")[0].get("value")
            assert typed == params.get("min_relative", ""), params
