"""Fixed glibc malloc thresholds for the measured process
(docs/plugin.md#the-allocator---laptime-malloc).

glibc serves a large block (128 KiB and up by default) with its own `mmap` and returns it to
the kernel on `free`. Each time a process frees such a block, glibc raises the threshold to
that size (up to 32 MiB) and the heap keeps more of what is freed. So a long-running process
that freed big arrays early serves later ones from memory it already holds, while a fresh
process page-faults them in again on every allocation. networkx's `test_layout.py` took
9.9 s alone in a fresh process (1.39 million minor faults) and 5.0 s once the thresholds were
fixed (27 thousand): a split job is such a fresh process, the history it was planned from is
not, and the plan cannot tell.

So while the plugin measures, it fixes both thresholds at glibc's own ceiling for the dynamic
one (mmap 32 MiB, trim 64 MiB: the state a long-running process reaches once it has freed a
32 MiB block), with `mallopt` for this process and the `MALLOC_*_` variables for the processes
it starts (xdist workers, a test's subprocesses). A test's allocation cost then no longer
depends on what ran before it in the process, in the history and in every job alike. The
cost: up to 64 MiB of freed memory stays in the heap instead of going back to the kernel.

`--laptime-malloc=dynamic` leaves glibc alone; thresholds the environment already fixes are
kept. The report's `session.malloc` says which state the tests ran in.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import MutableMapping

# Values of the report's session.malloc.
PINNED = "pinned"  # this plugin fixed the thresholds
ENVIRONMENT = "environment"  # the environment fixed them before the process started
DYNAMIC = "dynamic"  # glibc's default, the thresholds move with what the process frees
OTHER = "other"  # not glibc's allocator: nothing to fix
MALLOC_CHOICES = (PINNED, DYNAMIC)

MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc sets beside a raised mmap threshold
THRESHOLD_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD),
    "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD),
}
_TUNABLES = ("glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold")
# Every variable through which the environment can fix the thresholds.
ALLOCATOR_ENV = (*THRESHOLD_ENV, "GLIBC_TUNABLES")
_M_TRIM_THRESHOLD = -1  # <malloc.h>
_M_MMAP_THRESHOLD = -3
# Allocators preloaded in glibc's place: its mallopt would tune an allocator nobody uses.
_PRELOADED_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc", "hoard")


def pin_allocator(mode: str, environ: MutableMapping[str, str] | None = None) -> str:
    """Fix glibc's malloc thresholds unless `mode` is "dynamic"; the state the tests run in."""
    env = os.environ if environ is None else environ
    if not _glibc_allocates(env):
        return OTHER
    fixed = [key for key in THRESHOLD_ENV if key in env]
    tunables = env.get("GLIBC_TUNABLES", "")
    if fixed or any(name in tunables for name in _TUNABLES):
        # Ours, inherited from the plugin of a parent process (an xdist controller), or the
        # user's: either way glibc applied them at start-up.
        ours = all(env.get(key) == value for key, value in THRESHOLD_ENV.items())
        return PINNED if ours else ENVIRONMENT
    if mode == DYNAMIC or not _mallopt_thresholds():
        return DYNAMIC
    env.update(THRESHOLD_ENV)
    return PINNED


def release_environment(environ: MutableMapping[str, str] | None = None) -> None:
    """Take the plugin's thresholds out of the environment again (a session run in-process
    by another, as pytester does, must not leave them to the rest of the outer one)."""
    env = os.environ if environ is None else environ
    for key, value in THRESHOLD_ENV.items():
        if env.get(key) == value:
            del env[key]


def _glibc_allocates(environ: MutableMapping[str, str]) -> bool:
    preload = environ.get("LD_PRELOAD", "").lower()
    if any(name in preload for name in _PRELOADED_ALLOCATORS):
        return False
    return platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _mallopt_thresholds() -> bool:
    """Set both thresholds in this process (which also stops glibc from moving them)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # The mmap threshold first: glibc refuses one above its ceiling (32-bit builds: 512 KiB),
    # and then nothing is changed. Setting it by hand leaves the trim threshold where it was.
    return bool(
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
