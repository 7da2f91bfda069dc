"""The client's first-parent history from a real git repository, bounded and hostile-safe."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from laptime_ci.git_history import checkout_history, first_parent_log
from laptime_ci.upload import UploadMetadata


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def first_parent_history(env: dict[str, str], cwd: Path, limit: int = 50) -> tuple[str, ...]:
    """The commit ids of the client's first-parent log (what `first_parent` sends)."""
    return tuple(sha for sha, _ in first_parent_log(env, cwd, limit))


def _repo(tmp_path: Path, commits: int) -> tuple[Path, list[str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(commits):
        (repo / "f.txt").write_text(str(i))
        _git(repo, "add", "f.txt")
        _git(repo, "commit", "-q", "-m", f"c{i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return repo, shas


def test_history_is_head_and_first_parents_newest_first(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path, 5)
    # A merged side branch: its commits are not on the first-parent line.
    _git(repo, "checkout", "-q", "-b", "side", shas[2])
    (repo / "g.txt").write_text("side")
    _git(repo, "add", "g.txt")
    _git(repo, "commit", "-q", "-m", "side")
    side = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge", "side")
    merge = _git(repo, "rev-parse", "HEAD")
    history = first_parent_history({}, cwd=repo)
    assert history == (merge, *reversed(shas))
    assert side not in history
    assert first_parent_history({}, cwd=repo, limit=2) == (merge, shas[-1])
    assert first_parent_history({"LAPTIME_GIT_HISTORY": "0"}, cwd=repo) == ()
    fields = UploadMetadata(first_parents=history[:2]).form_fields()
    assert fields == [("first_parent", merge), ("first_parent", shas[-1])]


def test_no_repository_is_no_history(tmp_path: Path) -> None:
    assert first_parent_history({}, cwd=tmp_path) == ()


def test_a_hostile_repository_runs_nothing(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path, 2)
    witness = tmp_path / "ran"
    script = tmp_path / "monitor.sh"
    script.write_text(f"#!/bin/sh\ntouch {witness}\n")
    script.chmod(0o755)
    # A repository can name programs git runs: the filesystem monitor, hooks.
    _git(repo, "config", "core.fsmonitor", str(script))
    _git(repo, "config", "core.hooksPath", str(tmp_path))
    assert first_parent_history({}, cwd=repo) == (shas[1], shas[0])
    assert not witness.exists()


def test_each_commit_names_the_request_its_message_names(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path, 1)
    messages = {
        "github-merge": "Merge pull request #112 from dev/topic\n\nTopic",
        "squash": "Faster fixture (#113)",
        "gitlab": (
            "Merge branch 'topic' into 'main'\n\nFaster\n\nSee merge request grp/sub/proj!114"
        ),
        "plain": "No request here (#x) #115",
        "hostile": "Subject (#116)\x1f\x1e12345",
    }
    made = {}
    for name, message in messages.items():
        (repo / "f.txt").write_text(name)
        _git(repo, "add", "f.txt")
        _git(repo, "commit", "-q", "-m", message)
        made[name] = _git(repo, "rev-parse", "HEAD")
    log = dict(first_parent_log({}, cwd=repo))
    assert log == {
        made["github-merge"]: "112",
        made["squash"]: "113",
        made["gitlab"]: "114",
        made["plain"]: None,
        # Separators in a message spoil at most its own reading, never the commits after it.
        made["hostile"]: "116",
        shas[0]: None,
    }
    history = checkout_history({}, cwd=repo)
    assert history.first_parents == tuple(reversed([*shas, *made.values()]))
    assert set(history.merged_requests) == {
        f"{made['github-merge']}:112",
        f"{made['squash']}:113",
        f"{made['gitlab']}:114",
        f"{made['hostile']}:116",
    }
    fields = UploadMetadata(merged_requests=history.merged_requests[:1]).form_fields()
    assert fields == [("merged_request", history.merged_requests[0])]
    assert checkout_history({"LAPTIME_GIT_HISTORY": "off"}, cwd=repo) == ((), ())
