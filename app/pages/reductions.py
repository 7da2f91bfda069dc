"""The reductions page: covering sets for parametrize explosions, CI-matrix verdicts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlalchemy import Connection

from analysis.errors import AnswerError
from analysis.filters import Filters
from app.http.deps import ConnDep
from app.http.params import FiltersDep
from app.pages.common import PageProject, project_context, render
from app.project_records import Project
from app.services.recommendations import matrix_recommendation, parametrize_recommendation

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
    rows = list(merged.values())
    for row in rows:
        # Values unknown (ids that do not split the same way): no proposal, so the saving is
        # unknown, not zero. The largest explosion seen was one of these (36.6% of test time).
        row["saving_known"] = row["explosion"].get("values_source") is not None
        saved = [p["saved_s"] for p in row["proposals"].values() if p and p.get("saved_s")]
        row["saving_s"] = max(saved, default=0.0) if row["saving_known"] else None
    # Largest saving first, then those whose saving is unknown, then those that save nothing;
    # costliest first within each.
    return sorted(
        rows,
        key=lambda r: (
            0
            if r["saving_known"] and r["saving_s"] > MIN_SAVING_S
            else 1
            if not r["saving_known"]
            else 2,
            -(r["saving_s"] or 0.0),
            -(r["explosion"]["duration_s"] or 0.0),
        ),
    )


# A cut "saves time" when some proposal saves more than this per run (not rounding noise).
MIN_SAVING_S = 0.005


def saving_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The explosions whose cut saves time or may (values unknown), in the rows' order."""
    return [row for row in rows if not row["saving_known"] or row["saving_s"] > MIN_SAVING_S]


def _reduction_options(top: str, by: str, threshold: str) -> tuple[int, str, float]:
    try:
        top_n, ratio = int(top), float(threshold)
    except ValueError:
        raise AnswerError(
            f"top must be a whole number and threshold a number, got {top!r}, {threshold!r}"
        ) from None
    if not 1 <= top_n <= 100:
        raise AnswerError(f"top must be between 1 and 100, got {top_n}")
    if by not in ("file", "marker"):
        raise AnswerError(f"group by must be file or marker, got {by!r}")
    if not ratio > 1:
        raise AnswerError(f"threshold must be above 1, got {threshold}")
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
    show: str = "saving",
) -> Any:
    """Cut what need not run: covering sets for parametrize explosions (those whose cut saves
    time, largest saving first; `show=all` for every one), CI-matrix verdicts."""
    explosions: list[dict[str, Any]] | None = None
    all_explosions: list[dict[str, Any]] = []
    matrix: dict[str, Any] | None = None
    error: str | None = None
    try:
        top_n, group_by, ratio = _reduction_options(top, by, threshold)
        all_explosions = _explosions_by_strength(conn, project, filters, top_n)
        explosions = all_explosions if show == "all" else saving_rows(all_explosions)
        matrix = matrix_recommendation(conn, project, filters, group_by=group_by, threshold=ratio)
    except AnswerError as exc:  # anything else is ours: a logged 500
        error = str(exc)
    context = project_context(
        request,
        conn,
        project,
        "recommendations",
        explosions=explosions,
        explosions_total=len(all_explosions),
        explosions_saving=sum(
            1 for r in all_explosions if r["saving_known"] and r["saving_s"] > MIN_SAVING_S
        ),
        explosions_unknown=sum(1 for r in all_explosions if not r["saving_known"]),
        show_all=show == "all",
        matrix=matrix,
        strengths=COVERING_STRENGTHS,
        error=error,
        form={"top": top, "by": by, "threshold": threshold},
    )
    return render(request, "reductions.html", context)
