"""The plugin (the client) writes laptime JSON; the server's schema reads it: one contract."""

from __future__ import annotations

import json

from ingest.parsers.laptime_json_schema import (
    FORMAT_NAME,
    SCHEMA_VERSION,
    SESSION_FIELDS,
    TEST_FIELDS,
    TEST_REQUIRED,
)
from laptime_ci import plugin


def test_plugin_writes_the_schema_the_server_reads(clean_pytester) -> None:
    assert (plugin.FORMAT, plugin.VERSION) == (FORMAT_NAME, SCHEMA_VERSION)
    clean_pytester.makepyfile(
        "import pytest\n\n@pytest.mark.parametrize('x', [1])\ndef test_a(x):\n    pass\n"
    )
    assert clean_pytester.runpytest("--laptime-report=r.json").ret == 0
    document = json.loads((clean_pytester.path / "r.json").read_text())
    assert set(document["session"]) <= set(SESSION_FIELDS)
    (entry,) = document["tests"]
    assert set(entry) <= set(TEST_FIELDS)
    assert set(TEST_REQUIRED) <= set(entry)
