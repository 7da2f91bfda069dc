"""docs/architecture.md maps each capability to its files: every path it names must exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_path_the_architecture_map_names_exists() -> None:
    text = (REPO / "docs" / "architecture.md").read_text()
    paths = re.findall(r"`([a-z_][\w./-]*/[\w./-]*)`", text)
    assert len(paths) > 60  # the map names files, not only folders
    missing = [p for p in paths if not (REPO / p).exists()]
    assert missing == []


def test_every_top_level_package_is_on_the_map() -> None:
    text = (REPO / "docs" / "architecture.md").read_text()
    packages = {
        "app",
        "ingest",
        "analysis",
        "figures",
        "model",
        "demo",
        "pgcodec",
        "migrations",
        "client",
    }
    assert {p for p in packages if f"`{p}/" not in text} == set()
