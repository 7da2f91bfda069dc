"""Which commits a change came with: the range from the client's first-parent history, the
bisect list in the runner's words, and the default branch picked from a project's branches."""

from __future__ import annotations

import hashlib

from analysis.changes.attribution import (
    bisect_steps,
    commits_between,
    pick_default_branch,
    requests_of,
)


def sha(i: int) -> str:
    """Commit i's (made-up) id."""
    return hashlib.sha1(str(i).encode()).hexdigest()


HISTORY = [sha(i) for i in range(20, 0, -1)]  # newest first: 20, 19, ..., 1


def test_commits_strictly_between_oldest_first() -> None:
    between = commits_between(HISTORY, sha(15), sha(20))
    assert between is not None
    assert between.complete
    assert between.commits == tuple(sha(i) for i in (16, 17, 18, 19))


def test_adjacent_runs_have_nothing_between() -> None:
    between = commits_between(HISTORY, sha(19), sha(20))
    assert between is not None
    assert (between.commits, between.complete) == ((), True)


def test_a_history_that_does_not_reach_the_earlier_run_is_partial() -> None:
    between = commits_between(HISTORY[:5], sha(3), sha(20))
    assert between is not None
    assert not between.complete
    assert between.commits == tuple(sha(i) for i in (16, 17, 18, 19))


def test_abbreviated_ids_match_and_unrelated_history_is_refused() -> None:
    between = commits_between(HISTORY, sha(15)[:10], sha(20)[:12])
    assert between is not None
    assert len(between.commits) == 4
    # The history must start at the run's own commit, else it says nothing about the range.
    assert commits_between(HISTORY, sha(15), "f" * 40) is None
    assert commits_between(None, "a" * 40, "b" * 40) is None
    assert commits_between(HISTORY, None, sha(20)) is None


def test_bisect_steps_speak_the_runner() -> None:
    commits = ["a" * 40, "b" * 40]
    steps = bisect_steps(
        kind="test", name="tests/test_x.py::test_y[a b]", file="tests/test_x.py",
        runner="pytest", commits=commits,
    )  # fmt: skip
    assert [s.commit for s in steps] == commits
    assert steps[0].command == f"git checkout {'a' * 40} && pytest 'tests/test_x.py::test_y[a b]'"
    jest = bisect_steps(kind="file", name="src/a.test.js", file="src/a.test.js", runner="jest",
                        commits=commits[:1])  # fmt: skip
    assert jest[0].command.endswith("npx jest --ci --runTestsByPath src/a.test.js")
    hostile = bisect_steps(kind="test", name="t.py::x; rm -rf /", file="t.py", runner=None,
                           commits=commits[:1])  # fmt: skip
    assert hostile[0].command.endswith("pytest 't.py::x; rm -rf /'")
    job = bisect_steps(kind="job", name="unit tests", file=None, runner="pytest", commits=[])
    assert job == ()


def test_default_branch() -> None:
    assert pick_default_branch("release", [("main", 3)]) == "release"
    assert pick_default_branch(None, [("feature", 9), ("master", 1)]) == "master"
    assert pick_default_branch(None, [("a", 1), ("b", 5), ("", 9)]) == "b"
    assert pick_default_branch(None, []) is None


def test_the_requests_of_a_range_oldest_first_each_once() -> None:
    merged = [f"{sha(5)}:12", f"{sha(4)}:12", f"{sha(3)}:9", "junk", f"{sha(1)}:"]
    # Commits oldest first, one abbreviated; two commits of one request name it once.
    assert requests_of(merged, [sha(3), sha(4)[:10], sha(5)]) == ("9", "12")
    assert requests_of(merged, [sha(2)]) == ()
    # The after run's own request comes last, unless a commit already named it.
    assert requests_of(merged, [sha(3)], "77") == ("9", "77")
    assert requests_of(merged, [sha(3)], "9") == ("9",)
    assert requests_of(None, [sha(3)], None) == ()
