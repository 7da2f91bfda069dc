"""The reductions page: covering sets for parametrize explosions, CI-matrix verdicts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlalchemy import Connection

from analysis.filters import Filters
from app.api.deps import ConnDep
from app.api.params import FiltersDep
from app.db.projects import Project
from app.pages.common import PageProject, project_context, render
from app.recommend import matrix_recommendation, parametrize_recommendation

router = APIRouter(include_in_schema=False)

# The reductions page proposes covering sets of both strengths side by side.
COVERING_STRENGTHS = (1, 2)


def _explosions_by_strength(
    conn: Connection, project: Project, filters: Filters, top: int
) -> list[dict[str, Any]]:
    """Each explosion once, with its covering proposal (or the reason there is none) per
    strength."""
    merged: dict[str, dict[str, Any]] = {}
    for strength in COVERING_STRENGTHS:
        answer = parametrize_recommendation(conn, project, filters, strength=strength, top=top)
        for entry in answer["explosions"]:
            explosion = entry["explosion"]
            row = merged.setdefault(
                explosion["test"], {"explosion": explosion, "proposals": {}, "note": None}
            )
            row["proposals"][strength] = entry["proposal"]
            row["note"] = row["note"] or entry.get("note")
    return list(merged.values())


def _reduction_options(top: str, by: str, threshold: str) -> tuple[int, str, float]:
    try:
        top_n, ratio = int(top), float(threshold)
    except ValueError:
        raise ValueError(
            f"top must be a whole number and threshold a number, got {top!r}, {threshold!r}"
        ) from None
    if not 1 <= top_n <= 100:
        raise ValueError(f"top must be between 1 and 100, got {top_n}")
    if by not in ("file", "marker"):
        raise ValueError(f"group by must be file or marker, got {by!r}")
    if not ratio > 1:
        raise ValueError(f"threshold must be above 1, got {threshold}")
    return top_n, by, ratio


@router.get("/p/{slug}/reductions", response_class=HTMLResponse)
def reductions_page(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    filters: FiltersDep,
    top: str = "10",
    by: str = "file",
    threshold: str = "1.5",
) -> Any:
    """Cut what need not run: covering sets for parametrize explosions, CI-matrix verdicts."""
    explosions: list[dict[str, Any]] | None = None
    matrix: dict[str, Any] | None = None
    error: str | None = None
    try:
        top_n, group_by, ratio = _reduction_options(top, by, threshold)
        explosions = _explosions_by_strength(conn, project, filters, top_n)
        matrix = matrix_recommendation(conn, project, filters, group_by=group_by, threshold=ratio)
    except ValueError as exc:  # RecommendationError (no data) is a ValueError
        error = str(exc)
    context = project_context(
        request,
        conn,
        project,
        "recommendations",
        explosions=explosions,
        matrix=matrix,
        strengths=COVERING_STRENGTHS,
        error=error,
        form={"top": top, "by": by, "threshold": threshold},
    )
    return render(request, "reductions.html", context)
