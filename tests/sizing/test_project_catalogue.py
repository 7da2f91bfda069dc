"""The catalogue a project's machines are priced from, when a frame's unknown machine is NaN."""

from __future__ import annotations

from app.project_records import Project
from app.services.recommendations import project_catalogue


def _project(catalogue: str | None = None) -> Project:
    return Project(1, "p", "p", False, catalogue, None)


def test_an_unknown_machine_is_no_machine() -> None:
    # A runs frame holds NaN where a run named no machine; it once reached the matcher (a 500).
    guessed = project_catalogue(_project(), ["ubuntu-latest", float("nan"), None])  # type: ignore[list-item]
    assert guessed is not None
    assert guessed.match("ubuntu-latest") is not None
    assert project_catalogue(_project(), [float("nan")]) is None  # type: ignore[list-item]
    declared = project_catalogue(_project("github"), [float("nan")])  # type: ignore[list-item]
    assert declared is not None
