"""The plugin's session peak is the test process tree's; a container's cgroup peak (which
counts every process in it) is kept beside it under its own name and never replaces it."""

from __future__ import annotations

import json

import pytest


def test_session_peak_is_the_process_trees_and_the_cgroups_is_labelled_apart(
    clean_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A container where other processes pushed the cgroup to 4,461 MiB.
    monkeypatch.setattr("laptime_ci.plugin.cgroup_peak_mib", lambda: 4461.0)
    clean_pytester.makepyfile(test_small="def test_small():\n    assert [0] * 1000\n")
    clean_pytester.inline_run("--laptime-report=m.json", "-p", "no:xdist").assertoutcome(passed=1)
    session = json.loads((clean_pytester.path / "m.json").read_text())["session"]
    assert session["peak_rss_source"] == "process-tree"
    assert 0 < session["peak_rss_mib"] < 4461.0
    assert session["cgroup_peak_mib"] == 4461.0


def test_the_cgroup_is_never_the_session_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    """cgroup v2 `memory.peak` is the cgroup's lifetime maximum (an earlier pip install's 996
    MiB where the tests peaked at 281 MiB): not even a fallback for the job's peak."""
    from laptime_ci import plugin

    monkeypatch.setattr(plugin, "cgroup_peak_mib", lambda: 512.0)
    assert plugin.job_peak_memory(None, []) == (None, None)
    assert plugin.job_peak_memory(100.0, [50.0, 60.0]) == (210.0, "process-tree")
