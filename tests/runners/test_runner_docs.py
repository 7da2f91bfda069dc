"""Every runner in the registry is documented in docs/runners.md (a row of its table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.parsers.runners import RUNNERS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "runners.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_runner_has_a_row(runner: str) -> None:
    assert f"\n| `{runner}` |" in DOC
