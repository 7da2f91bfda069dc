"""One sticky comment per pull/merge request, edited in place, within the size limit; against
a real local HTTP server imitating the GitHub and GitLab comment endpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from laptime_ci.cli import main
from laptime_ci.compare_md import COMMENT_LIMIT, MARKER, markdown
from laptime_ci.pr_comment import upsert_comment
from tests.client.forge_server import forge_server

TOKEN = "forge-secret"


def _answer(slow: int = 3) -> dict[str, Any]:
    moves = [
        {
            "nodeid": f"tests/test_big.py::test_slow[{i}-{'x' * 200}]",
            "here_s": 10.0 + i,
            "base_median_s": 1.0,
            "threshold_s": 0.1,
        }
        for i in range(slow)
    ]
    measure = {"here": 120.0, "base_median": 100.0, "base_spread": 2.0}
    return {
        "pipeline": "77",
        "base": "main",
        "cells": ["unit|"],
        "base_runs": 5,
        "wall": measure,
        "test_time": measure,
        "slower": moves,
        "faster": [],
        "new_tests": [],
        "removed_tests": [],
        "new_failures": ["tests/test_a.py::test_<b>|pipe"],
        "flaky": [],
    }


def _github_env(url: str, tmp_path: Path) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 42}}))
    return {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": "acme/app",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": url,
    }


def test_github_second_run_patches_the_same_comment(tmp_path: Path) -> None:
    with forge_server(TOKEN) as forge:
        forge.comments[1] = {"id": 1, "body": "a reviewer's comment"}
        env = _github_env(forge.url, tmp_path)
        first = upsert_comment(markdown(_answer(1)), env)
        second = upsert_comment(markdown(_answer(2)), env)
    assert first[0] == "created"
    assert second == ("updated", first[1])
    methods = [(m, p) for m, p, _ in forge.requests if m != "GET"]
    assert methods == [
        ("POST", "/repos/acme/app/issues/42/comments"),
        ("PATCH", f"/repos/acme/app/issues/comments/{first[1]}"),
    ]
    ours = [c for c in forge.comments.values() if MARKER in c["body"]]
    assert len(ours) == 1
    assert "test_slow[1-" in ours[0]["body"]
    assert forge.comments[1]["body"] == "a reviewer's comment"


def test_gitlab_second_run_puts_the_same_note(tmp_path: Path) -> None:
    with forge_server(TOKEN) as forge:
        env = {
            "GITLAB_CI": "true",
            "CI_API_V4_URL": f"{forge.url}/api/v4",
            "CI_PROJECT_ID": "12",
            "CI_MERGE_REQUEST_IID": "7",
            "GITLAB_TOKEN": TOKEN,
        }
        first = upsert_comment(markdown(_answer(1)), env)
        second = upsert_comment(markdown(_answer(1)), env)
    assert second == ("updated", first[1])
    writes = [(m, p) for m, p, _ in forge.requests if m != "GET"]
    assert writes == [
        ("POST", "/api/v4/projects/12/merge_requests/7/notes"),
        ("PUT", f"/api/v4/projects/12/merge_requests/7/notes/{first[1]}"),
    ]
    assert all(auth == TOKEN for _, _, auth in forge.requests)


def test_five_hundred_slow_tests_fit_ranked_with_a_link(tmp_path: Path) -> None:
    link = "https://laptime.example/p/compare?pipeline=77"
    text = markdown(_answer(500), link=link)
    assert len(text.encode()) <= COMMENT_LIMIT
    kept = text.count("test_slow[")
    assert 50 < kept < 500
    assert f"…and {500 - kept} more: {link}" in text
    # Ranked, not cut at random: the biggest move first.
    assert text.index("test_slow[499-") < text.index("test_slow[498-")
    # A hostile nodeid cannot open HTML or break the table.
    assert "<b>" not in text
    assert "\\|pipe" in text
    with forge_server(TOKEN) as forge:
        upsert_comment(text, _github_env(forge.url, tmp_path))
    (posted,) = forge.comments.values()
    assert len(posted["body"].encode()) <= COMMENT_LIMIT


def test_fork_two_step_markdown_artifact_then_trusted_comment(tmp_path: Path) -> None:
    """The fork's job writes compare.md (no secrets); the trusted job posts it, twice."""
    out = tmp_path / "compare.md"
    out.write_text(markdown(_answer(2)), encoding="utf-8")
    with forge_server(TOKEN) as forge:
        env = _github_env(forge.url, tmp_path)
        env.pop("GITHUB_EVENT_PATH")
        env["LAPTIME_PR"] = "42"
        import os

        saved = dict(os.environ)
        try:
            os.environ.update(env)
            assert main(["comment", "--file", str(out)]) == 0
            assert main(["comment", "--file", str(out)]) == 0
            os.environ["LAPTIME_PR"] = "42; rm -rf /"
            assert main(["comment", "--file", str(out)]) == 1
        finally:
            os.environ.clear()
            os.environ.update(saved)
    assert [m for m, _, _ in forge.requests if m != "GET"] == ["POST", "PATCH"]
    assert len(forge.comments) == 1
