"""The plugin fixes glibc's malloc thresholds while it measures.

A fresh job process page-faulted large arrays that the long history process served from its
heap (networkx's test_layout.py: 9.9 s vs 5.0 s). The suite below allocates three 4 MiB
blocks and frees them, 20 times, counting minor page faults. With glibc's dynamic thresholds
the first free raises the mmap threshold to 4 MiB and the trim threshold to 8 MiB, so the
12 MiB freed at the heap's top goes back to the kernel every round and is faulted in again
the next; with the plugin's thresholds (trim at 64 MiB) the heap keeps it.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import pytest

from laptime_ci.plugin_malloc import (
    DYNAMIC,
    ENVIRONMENT,
    OTHER,
    PINNED,
    THRESHOLD_ENV,
    pin_allocator,
)

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
BLOCK = 4 << 20
BLOCKS = 3
ROUNDS = 20

SUITE = f"""
import json
import os
import resource


def test_reuse():
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    before = faults()
    for _ in range({ROUNDS}):
        blocks = [b"x" * {BLOCK} for _ in range({BLOCKS})]  # malloc'd and written
        del blocks
    state = {{"faults": faults() - before, "env": {{
        key: os.environ.get(key) for key in {sorted(THRESHOLD_ENV)!r}
    }}}}
    with open("inner.json", "w") as out:
        json.dump(state, out)
"""


def _run(pytester: pytest.Pytester, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    pytester.makepyfile(test_alloc=SUITE)
    result = pytester.runpytest_subprocess("--laptime-report=r.json", *args)
    result.assert_outcomes(passed=1)
    report = json.loads(Path(pytester.path, "r.json").read_text())
    inner = json.loads(Path(pytester.path, "inner.json").read_text())
    return report["session"], inner


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator is the one with dynamic thresholds")
def test_pinned_thresholds_serve_a_freed_block_again(clean_pytester: pytest.Pytester) -> None:
    pages = BLOCKS * BLOCK // 4096  # one round's
    session, inner = _run(clean_pytester, "-p", "no:xdist")
    assert session["malloc"] == PINNED
    # Children inherit the thresholds (xdist workers, a test's subprocesses).
    assert inner["env"] == THRESHOLD_ENV
    # The blocks' first touch, not one per round.
    assert inner["faults"] < 2 * pages

    session, inner = _run(clean_pytester, "-p", "no:xdist", "--laptime-malloc=dynamic")
    assert session["malloc"] == DYNAMIC
    assert inner["env"] == dict.fromkeys(THRESHOLD_ENV)
    assert inner["faults"] > (ROUNDS // 2) * pages


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator is the one with dynamic thresholds")
def test_ini_chooses_dynamic_and_a_bad_value_is_a_usage_error(
    clean_pytester: pytest.Pytester,
) -> None:
    clean_pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\nlaptime_malloc = dynamic\n")
    session, _ = _run(clean_pytester, "-p", "no:xdist")
    assert session["malloc"] == DYNAMIC
    clean_pytester.makeini("[pytest]\nlaptime_malloc = jemalloc\n")
    result = clean_pytester.runpytest_subprocess("--laptime-report=r.json", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*laptime_malloc = 'jemalloc': expected one of pinned, dynamic*"])


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator is the one with dynamic thresholds")
def test_thresholds_the_environment_set_are_kept() -> None:
    user = {"MALLOC_MMAP_THRESHOLD_": "131072"}
    assert pin_allocator(PINNED, user) == ENVIRONMENT
    assert user == {"MALLOC_MMAP_THRESHOLD_": "131072"}
    tunables = {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1000000"}
    assert pin_allocator(PINNED, tunables) == ENVIRONMENT
    # An xdist worker inherits the controller's: it runs pinned.
    assert pin_allocator(PINNED, dict(THRESHOLD_ENV)) == PINNED


def test_a_preloaded_allocator_is_not_glibcs() -> None:
    env = {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}
    assert pin_allocator(PINNED, env) == OTHER
    assert "MALLOC_MMAP_THRESHOLD_" not in env


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator is the one with dynamic thresholds")
def test_an_in_process_session_leaves_the_environment_as_it_was(
    clean_pytester: pytest.Pytester,
) -> None:
    clean_pytester.makepyfile(
        test_env="import os\n\ndef test_env():\n    assert os.environ['MALLOC_TRIM_THRESHOLD_']\n"
    )
    clean_pytester.inline_run("--laptime-report=r.json", "-p", "no:xdist").assertoutcome(passed=1)
    assert not any(key in os.environ for key in THRESHOLD_ENV)


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator is the one with dynamic thresholds")
def test_xdist_workers_run_with_the_controllers_thresholds(clean_pytester: pytest.Pytester) -> None:
    pages = BLOCKS * BLOCK // 4096
    session, inner = _run(clean_pytester, "-n", "2")
    assert session["malloc"] == PINNED
    assert session["xdist_workers"] == 2
    assert inner["env"] == THRESHOLD_ENV
    # The worker's glibc read them at its start: the blocks are faulted in once there too.
    assert inner["faults"] < 2 * pages
