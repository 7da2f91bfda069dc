"""Fixtures for the plugin tests: pytester, with the plugin's environment switches cleared."""

from __future__ import annotations

import pytest

# The allocator thresholds the plugin sets for its children (plugin_malloc): an inline run
# sets them in this process, and a subprocess would inherit them from an earlier one.
from laptime_ci.plugin_malloc import ALLOCATOR_ENV as ALLOCATOR_VARS

LAPTIME_VARS = (
    "LAPTIME_REPORT",
    "LAPTIME_URL",
    "LAPTIME_TOKEN",
    "LAPTIME_UPLOAD_RETRIES",
    "LAPTIME_JOB",
    "LAPTIME_MACHINE",
    "LAPTIME_LABELS",
    "LAPTIME_PROJECT",
    "LAPTIME_READ_TOKEN",
    "LAPTIME_SHARD_CACHE",
    "LAPTIME_UPLOAD_MAX_TIME_S",
    "LAPTIME_QUARANTINE",
)


@pytest.fixture(autouse=True)
def _outer_allocator_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session run in-process (pytester's inline runs) must not fix the malloc thresholds
    of this test process, which also hosts the live server and ingest worker of later tests.
    Subprocess runs, where every allocator assertion is made, are unaffected."""
    import laptime_ci.plugin_malloc as plugin_malloc

    monkeypatch.setattr(plugin_malloc, "_mallopt_thresholds", lambda: True)


@pytest.fixture
def clean_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose runs do not inherit this session's laptime settings."""
    for name in LAPTIME_VARS:
        monkeypatch.delenv(name, raising=False)
    for name in ALLOCATOR_VARS:
        # Set, then deleted: the monkeypatch restores whatever the run below leaves.
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    pytester.makeini(
        "[pytest]\naddopts = -p no:cacheprovider\n"
        "filterwarnings = ignore::pytest.PytestAssertRewriteWarning\n"
        "markers =\n    slow: slow\n    gpu: gpu\n"
    )
    return pytester
