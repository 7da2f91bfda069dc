"""docs/operations.md lists exactly the laptime metrics a live server exposes, and the settings
it names exist."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from app.settings import Settings
from tests.conftest import LiveServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def _exposed(url: str) -> dict[str, str]:
    """Exposed name -> type of every laptime metric (counters with their `_total`)."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    found = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("laptime_"):
            name = f"{family.name}_total" if family.type == "counter" else family.name
            found[name] = family.type
    return found


def test_every_exposed_metric_is_documented_with_its_type(live_server: LiveServer) -> None:
    rows = re.findall(r"^\| `(laptime_[a-z_]+)` \| (\w+) \|", DOC.read_text(), re.MULTILINE)
    documented = dict(rows)
    exposed = _exposed(live_server.url)
    assert len(exposed) >= 15  # the scrape saw the metrics, not an empty page
    assert documented == exposed


def test_the_settings_the_doc_names_exist() -> None:
    named = set(re.findall(r"^\| `LAPTIME_([A-Z_]+)` \|", DOC.read_text(), re.MULTILINE))
    assert {"LOG_FORMAT", "LOG_LEVEL", "METRICS_TOKEN", "WORKER_METRICS_PORT"} <= named
    assert {n for n in named if n.lower() not in Settings.model_fields} == set()
