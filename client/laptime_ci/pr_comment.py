"""One sticky comment per pull/merge request, found by its hidden marker and edited in place."""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from laptime_ci.compare_md import MARKER

Env = Mapping[str, str]
# Comments read per page while looking for ours (GitHub and GitLab allow 100).
PER_PAGE = 100
# Pages read at most: a PR with 5,000 comments is not worth a longer hunt.
MAX_PAGES = 50


class CommentError(RuntimeError):
    """The comment could not be posted (no token, no PR, or the forge said no)."""


@dataclass(frozen=True)
class Forge:
    """Where a PR's comments live and how to authenticate."""

    list_url: str  # GET (paged) and POST
    item_url: str  # PATCH/PUT target with "{id}"
    headers: dict[str, str]
    edit_method: str


def _request(method: str, url: str, headers: dict[str, str], body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def github_forge(env: Env) -> Forge:
    """GitHub: GITHUB_TOKEN, GITHUB_REPOSITORY and the PR number from the event file (or
    LAPTIME_PR)."""
    token, repo = env.get("GITHUB_TOKEN"), env.get("GITHUB_REPOSITORY")
    if not token or not repo:
        raise CommentError("GitHub needs GITHUB_TOKEN and GITHUB_REPOSITORY")
    number = env.get("LAPTIME_PR")
    if not number and env.get("GITHUB_EVENT_PATH"):
        with open(env["GITHUB_EVENT_PATH"], encoding="utf-8") as handle:
            event = json.load(handle)
        pr = event.get("pull_request") or {}
        number = str(pr.get("number") or event.get("number") or "") or None
    if not number or not number.strip().isdigit():
        # LAPTIME_PR may come from a fork's artifact: a number, nothing else reaches the URL.
        raise CommentError("no pull request number (GITHUB_EVENT_PATH or LAPTIME_PR, digits)")
    number = number.strip()
    api = env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    base = f"{api}/repos/{repo}/issues"
    return Forge(
        list_url=f"{base}/{quote(number)}/comments",
        item_url=f"{base}/comments/{{id}}",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"},
        edit_method="PATCH",
    )


def gitlab_forge(env: Env) -> Forge:
    """GitLab: CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID and a token
    (LAPTIME_GITLAB_TOKEN or GITLAB_TOKEN; a CI job token cannot write notes)."""
    api, project, iid = (
        env.get(k) for k in ("CI_API_V4_URL", "CI_PROJECT_ID", "CI_MERGE_REQUEST_IID")
    )
    token = env.get("LAPTIME_GITLAB_TOKEN") or env.get("GITLAB_TOKEN")
    if not (api and project and iid and token):
        raise CommentError(
            "GitLab needs CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID and GITLAB_TOKEN"
        )
    base = f"{api.rstrip('/')}/projects/{quote(project, safe='')}/merge_requests/{quote(iid)}/notes"
    return Forge(
        list_url=base,
        item_url=f"{base}/{{id}}",
        headers={"PRIVATE-TOKEN": token},
        edit_method="PUT",
    )


def forge_of(env: Env) -> Forge:
    """The forge of this CI job."""
    if env.get("GITLAB_CI") or env.get("CI_MERGE_REQUEST_IID"):
        return gitlab_forge(env)
    return github_forge(env)


def _find(forge: Forge) -> int | None:
    """The id of our comment (the first carrying the marker), None when there is none yet."""
    for page in range(1, MAX_PAGES + 1):
        sep = "&" if "?" in forge.list_url else "?"
        items = _request(
            "GET", f"{forge.list_url}{sep}per_page={PER_PAGE}&page={page}", forge.headers
        )
        for item in items or []:
            if MARKER in str(item.get("body") or ""):
                return int(item["id"])
        if not items or len(items) < PER_PAGE:
            return None
    return None


def upsert_comment(body: str, env: Env | None = None) -> tuple[str, int]:
    """Edit our comment if it exists, else post it: ("updated" | "created", comment id)."""
    forge = forge_of(env if env is not None else os.environ)
    if MARKER not in body:
        body = f"{MARKER}\n{body}"
    try:
        existing = _find(forge)
        if existing is not None:
            url = forge.item_url.format(id=existing)
            _request(forge.edit_method, url, forge.headers, {"body": body})
            return "updated", existing
        created = _request("POST", forge.list_url, forge.headers, {"body": body})
    except OSError as exc:  # URLError and HTTPError are OSErrors
        raise CommentError(f"comment not posted: {exc}") from exc
    return "created", int(created["id"])
