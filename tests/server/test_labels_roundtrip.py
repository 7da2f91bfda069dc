"""Labels with commas, `=`, quotes, emoji and long values round-trip exactly.

`labels_key` joined pairs with "," and split on it unescaped: one label `platform=linux,arm64`
made every page of its project answer 500 and `rollups?by=label:x` a 422 with a Python error.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import httpx
import lxml.html  # type: ignore[import-untyped]
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from model.frames import label_values, labels_key, parse_labels_key
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.factories import junit_xml
from tests.server.test_upload_flow import upload, wait_done

# Two runs of one matrix: every label holds a character the old key format could not.
LONG = "é" * 100 + "x" * 100  # 200 characters
RUNS = (
    {
        "platform": "linux,arm64",
        "flags": "a=b,c=d",
        "quote": "\"double\" and 'single'",
        "emoji": "🚀 fast",
        "long": LONG,
        "comma,key": "v",
        "pct": "100%2C",
    },
    {
        "platform": "macos,x86_64",
        "flags": "a=b",
        "quote": "plain",
        "emoji": "🐢 slow",
        "long": LONG[:-1] + "y",
        "comma,key": "w",
        "pct": "100%",
    },
)


@given(st.dictionaries(st.text(min_size=1), st.text()))
def test_labels_key_parses_back_to_exactly_the_labels(labels: dict[str, str]) -> None:
    key = labels_key(labels)
    assert parse_labels_key(key) == labels
    # And one key per label set: equal keys mean equal sets.
    assert labels_key(parse_labels_key(key)) == key


def test_label_values_of_a_key_with_separators_inside() -> None:
    keys = [labels_key(r) for r in RUNS]
    assert list(label_values(pd.Series(keys), "platform")) == ["linux,arm64", "macos,x86_64"]
    assert list(label_values(pd.Series(keys), "comma,key")) == ["v", "w"]


@pytest.fixture(scope="module")
def labelled(live_server: LiveServer, engine: Engine) -> ProjectFixture:
    """A public project with one run per label set of RUNS (different test times)."""
    project = make_project(engine, public=True)
    for index, labels in enumerate(RUNS):
        response = upload(
            live_server,
            project.upload_token,
            [("report.xml", junit_xml(6 + 6 * index, seed=index))],
            job="unit",
            commit="c1",
            label=[f"{k}={v}" for k, v in labels.items()],
        )
        assert response.status_code == 202, response.text
        assert wait_done(live_server, project.upload_token, response.json()["id"])["status"] == (
            "done"
        )
    return project


def test_stored_labels_are_exactly_the_uploaded_ones(
    labelled: ProjectFixture, engine: Engine
) -> None:
    with engine.connect() as conn:
        stored = conn.execute(
            text("SELECT labels::text, labels_key FROM run WHERE project_id = :p ORDER BY id"),
            {"p": labelled.id},
        ).all()
    assert [json.loads(row[0]) for row in stored] == list(RUNS)
    assert [parse_labels_key(row[1]) for row in stored] == list(RUNS)


def _rollup(server: LiveServer, project: ProjectFixture, **params: object) -> dict[str, object]:
    response = httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/rollups?{urlencode(params, doseq=True)}"
    )
    assert response.status_code == 200, response.text
    doc: dict[str, object] = response.json()
    return doc


@pytest.mark.parametrize("key", sorted(RUNS[0]))
def test_rollup_by_any_label_answers_its_exact_values(
    live_server: LiveServer, labelled: ProjectFixture, key: str
) -> None:
    doc = _rollup(live_server, labelled, by=f"label:{key}", days=3650)
    assert sorted(r["key"] for r in doc["rows"]) == sorted(r[key] for r in RUNS)  # type: ignore[union-attr,index]


@pytest.mark.parametrize("key", sorted(RUNS[0]))
def test_filter_by_a_label_keeps_exactly_its_run(
    live_server: LiveServer, labelled: ProjectFixture, key: str
) -> None:
    everything = _rollup(live_server, labelled, by="job", days=3650)
    totals = []
    for labels in RUNS:
        doc = _rollup(live_server, labelled, by="job", days=3650, label=f"{key}={labels[key]}")
        (row,) = doc["rows"]  # type: ignore[misc]
        totals.append(row["total_s"])  # type: ignore[index]
    # Each filter kept one run, and together they are everything.
    assert len(set(totals)) == 2
    assert sum(totals) == pytest.approx(everything["grand_total_s"])


PAGES = ("", "/time", "/recommendations", "/reductions", "/flaky")


@pytest.mark.parametrize("tab", PAGES)
def test_every_page_shows_and_filters_by_such_labels(
    live_server: LiveServer, labelled: ProjectFixture, tab: str
) -> None:
    base = f"{live_server.url}/p/{labelled.slug}{tab}"
    page = httpx.get(base, timeout=60)
    assert page.status_code == 200, page.text[:500]
    filtered = httpx.get(f"{base}?{urlencode({'label': 'platform=linux,arm64'})}", timeout=60)
    assert filtered.status_code == 200, filtered.text[:500]
    # The filter menu offers each label exactly (HTML-escaped once by the template).
    assert '<option value="platform=linux,arm64"' in page.text
    assert "quote=&#34;double&#34; and &#39;single&#39;" in page.text
    assert f"long={LONG}" in page.text


def test_test_page_and_split_plan_of_a_labelled_cell(
    live_server: LiveServer, labelled: ProjectFixture
) -> None:
    rows = _rollup(live_server, labelled, by="test", days=3650)["rows"]
    nodeid = rows[0]["key"]  # type: ignore[index]
    page = httpx.get(f"{live_server.url}/p/{labelled.slug}/test", params={"nodeid": nodeid})
    assert page.status_code == 200, page.text[:500]
    plan = httpx.get(
        f"{live_server.url}/api/v1/projects/{labelled.slug}/recommendations/split",
        params={"cell": labels_key(RUNS[0]), "days": 3650},
        timeout=60,
    )
    assert plan.status_code == 200, plan.text[:500]
    assert plan.json()["cell"] == labels_key(RUNS[0])
    assert {parse_labels_key(c)["platform"] for c in plan.json()["cells"]} == {
        "linux,arm64",
        "macos,x86_64",
    }
    # The page offers the cells by their key and shows their labels as written.
    page = httpx.get(
        f"{live_server.url}/p/{labelled.slug}/recommendations",
        params={"cell": labels_key(RUNS[0]), "days": 3650, "jobs": "2"},
        timeout=60,
    )
    assert page.status_code == 200
    doc = lxml.html.fromstring(page.text)
    options = {
        o.get("value"): o.text_content() for o in doc.cssselect('select[name="cell"] option')
    }
    written = ", ".join(f"{k}={v}" for k, v in sorted(RUNS[0].items()))
    assert options[labels_key(RUNS[0])] == written
