"""`--laptime-shard=I/N` inside pytest (serial and under xdist): each test in one shard, the
others deselected; a full run (1/1) writes the durations cache the offline plan reads, a
shard run writes only its own record (tests/plugin/test_shard_agreement.py has the mixes)."""

from __future__ import annotations

import json

import pytest

from laptime_ci.shards import split_by_hash

ALL = sorted(f"test_s.py::test_n[{n}]" for n in range(9))
SUITE = "import pytest\n\n@pytest.mark.parametrize('n', range(9))\ndef test_n(n):\n    pass\n"


def test_shards_partition_the_suite_without_a_server(clean_pytester):
    clean_pytester.makepyfile(test_s=SUITE)
    ran: list[str] = []
    for index in (1, 2, 3):
        result = clean_pytester.runpytest(f"--laptime-shard={index}/3", "--laptime-report=r.json")
        assert result.ret == 0
        result.stdout.fnmatch_lines(["*laptime: warning: shard plan by nodeid hash*"])
        nodeids = [
            t["nodeid"] for t in json.loads((clean_pytester.path / "r.json").read_text())["tests"]
        ]
        outcomes = result.parseoutcomes()
        assert (outcomes["passed"], outcomes["deselected"]) == (len(nodeids), 9 - len(nodeids))
        ran += nodeids
        # No shard writes the cache its siblings plan from.
        assert not (clean_pytester.path / ".laptime" / "durations.json").exists()
    assert sorted(ran) == ALL


def test_xdist_workers_agree_and_the_controller_reports(clean_pytester):
    clean_pytester.makepyfile(test_s=SUITE)
    result = clean_pytester.runpytest_subprocess(
        "--laptime-shard=2/3", "--laptime-report=r.json", "-n", "2"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["*laptime: warning: shard plan by nodeid hash*", "laptime: shard 2/3: 3 of 9 tests (hash)"]
    )
    report = json.loads((clean_pytester.path / "r.json").read_text())
    assert sorted(t["nodeid"] for t in report["tests"]) == split_by_hash(ALL, 3)[1]


def test_a_run_leaves_its_durations_for_the_fallback(clean_pytester):
    clean_pytester.makepyfile(test_s=SUITE)
    result = clean_pytester.runpytest("--laptime-shard=1/1")
    assert result.ret == 0
    cache = json.loads((clean_pytester.path / ".laptime" / "durations.json").read_text())
    assert sorted(cache["durations"]) == ALL
    result = clean_pytester.runpytest("--laptime-shard=1/2")
    result.stdout.fnmatch_lines(["*laptime: warning: shard plan from cached durations*"])


def test_a_malformed_shard_is_a_usage_error(clean_pytester):
    clean_pytester.makepyfile(test_s=SUITE)
    result = clean_pytester.runpytest("--laptime-shard=4/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--laptime-shard*I must be between 1 and N*"])
