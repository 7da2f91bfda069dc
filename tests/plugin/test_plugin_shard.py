"""`--laptime-shard=I/N` inside pytest (serial and under xdist): each test in one shard, the
others deselected, the durations cache written for the next run's fallback."""

from __future__ import annotations

import json

import pytest

SUITE = "import pytest\n\n@pytest.mark.parametrize('n', range(9))\ndef test_n(n):\n    pass\n"


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "xdist"])
def test_shards_partition_the_suite_without_a_server(clean_pytester, xdist):
    clean_pytester.makepyfile(test_s=SUITE)
    ran: list[str] = []
    for index in (1, 2, 3):
        args = [f"--laptime-shard={index}/3", "--laptime-report=r.json"]
        if xdist:
            args += ["-n", "2"]
        result = clean_pytester.runpytest_subprocess(*args)
        assert result.ret == 0
        result.stdout.fnmatch_lines(["*laptime: warning: shard plan by nodeid hash*"])
        report = json.loads((clean_pytester.path / "r.json").read_text())
        nodeids = [t["nodeid"] for t in report["tests"]]
        assert result.parseoutcomes()["passed"] == len(nodeids)
        if not xdist:  # xdist's controller does not count the workers' deselections
            assert result.parseoutcomes()["deselected"] == 9 - len(nodeids)
        ran += nodeids
        # Keep the cache out of the next shard's plan: siblings plan from the same state.
        (clean_pytester.path / ".laptime" / "durations.json").unlink()
    assert sorted(ran) == sorted(f"test_s.py::test_n[{n}]" for n in range(9))


def test_a_run_leaves_its_durations_for_the_fallback(clean_pytester):
    clean_pytester.makepyfile(test_s=SUITE)
    result = clean_pytester.runpytest("--laptime-shard=1/1")
    assert result.ret == 0
    cache = json.loads((clean_pytester.path / ".laptime" / "durations.json").read_text())
    assert sorted(cache["durations"]) == sorted(f"test_s.py::test_n[{n}]" for n in range(9))
    result = clean_pytester.runpytest("--laptime-shard=1/2")
    result.stdout.fnmatch_lines(["*laptime: warning: shard plan from cached durations*"])


def test_a_malformed_shard_is_a_usage_error(clean_pytester):
    clean_pytester.makepyfile(test_s=SUITE)
    result = clean_pytester.runpytest("--laptime-shard=4/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--laptime-shard*I must be between 1 and N*"])
