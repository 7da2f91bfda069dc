"""Fixtures for the plugin tests: pytester, with the plugin's environment switches cleared."""

from __future__ import annotations

# In-process pytester runs drop the modules first imported inside them. httpx imports
# httpcore lazily and caches its exception classes, so a second httpcore module would raise
# errors httpx no longer translates. Import both up front, outside any inner run.
import httpcore  # noqa: F401
import pytest

import app.client  # noqa: F401

LAPTIME_VARS = (
    "LAPTIME_REPORT",
    "LAPTIME_URL",
    "LAPTIME_TOKEN",
    "LAPTIME_UPLOAD_RETRIES",
    "LAPTIME_JOB",
    "LAPTIME_MACHINE",
    "LAPTIME_LABELS",
)


@pytest.fixture
def clean_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose runs do not inherit this session's laptime settings."""
    for name in LAPTIME_VARS:
        monkeypatch.delenv(name, raising=False)
    pytester.makeini(
        "[pytest]\naddopts = -p no:cacheprovider\n"
        "filterwarnings = ignore::pytest.PytestAssertRewriteWarning\n"
        "markers =\n    slow: slow\n    gpu: gpu\n"
    )
    return pytester
