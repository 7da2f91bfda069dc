"""The metrics directory `laptime serve` shares with its processes: fresh, and exported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.cli.metrics_dir import shared_metrics_dir
from app.metrics.process_dir import MULTIPROC_ENV


def test_a_directory_is_made_exported_and_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    with shared_metrics_dir(needed=True) as made:
        assert made is not None
        assert made.is_dir()
        assert not list(made.iterdir())
        assert os.environ[MULTIPROC_ENV] == str(made)
    assert not made.exists()
    assert MULTIPROC_ENV not in os.environ


def test_one_process_alone_needs_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    with shared_metrics_dir(needed=False) as made:
        assert made is None
        assert MULTIPROC_ENV not in os.environ


def test_the_operators_directory_loses_only_stale_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = tmp_path / "metrics"
    given.mkdir()
    (given / "counter_123.db").write_bytes(b"old")
    (given / "README").write_text("keep")
    monkeypatch.setenv(MULTIPROC_ENV, str(given))
    with shared_metrics_dir(needed=False) as used:
        assert used == given
        assert sorted(p.name for p in given.iterdir()) == ["README"]
    assert given.is_dir()  # the operator's directory stays
