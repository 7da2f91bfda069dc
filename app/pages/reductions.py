"""The reductions page: covering sets for parametrize explosions, CI-matrix verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlalchemy import Connection

from analysis.errors import AnswerError
from analysis.filters import Filters
from analysis.reduce.matrix_reduce import GroupBy
from app.http.deps import ConnDep
from app.http.params import FiltersDep
from app.pages.common import PageProject, project_context, render
from app.project_records import Project
from app.schemas.reduce import CoveringProposal, Explosion, Matrix, Parametrize
from app.services.recommendations import matrix_recommendation, parametrize_recommendation

router = APIRouter(include_in_schema=False)

# The reductions page proposes covering sets of both strengths side by side.
COVERING_STRENGTHS = (1, 2)


@dataclass
class ExplosionRow:
    """One explosion on the page, with its covering proposal per strength (None: none could
    be made, the note says why)."""

    explosion: Explosion
    proposals: dict[int, CoveringProposal | None] = field(default_factory=dict)
    note: str | None = None

    @property
    def saving_known(self) -> bool:
        """Values unknown (ids that do not split the same way): no proposal, so the saving is
        unknown, not zero. The largest explosion seen was one of these (36.6% of test time)."""
        return self.explosion.values_source is not None

    @property
    def saving_s(self) -> float | None:
        """The largest saving per run of any strength's proposal (None: unknown)."""
        if not self.saving_known:
            return None
        return max((p.saved_s for p in self.proposals.values() if p and p.saved_s), default=0.0)


def _explosions_by_strength(
    conn: Connection, project: Project, filters: Filters, top: int
) -> list[ExplosionRow]:
    """Each explosion once, with its covering proposal (or the reason there is none) per
    strength."""
    merged: dict[str, ExplosionRow] = {}
    for strength in COVERING_STRENGTHS:
        answer = Parametrize.of(
            parametrize_recommendation(conn, project, filters, strength=strength, top=top)
        )
        for entry in answer.explosions:
            row = merged.setdefault(entry.explosion.test, ExplosionRow(entry.explosion))
            row.proposals[strength] = entry.proposal
            row.note = row.note or entry.note
    # Largest saving first, then those whose saving is unknown, then those that save nothing;
    # costliest first within each.
    return sorted(
        merged.values(),
        key=lambda r: (
            0 if _saves(r) else 1 if not r.saving_known else 2,
            -(r.saving_s or 0.0),
            -(r.explosion.duration_s or 0.0),
        ),
    )


def _saves(row: ExplosionRow) -> bool:
    return row.saving_known and (row.saving_s or 0.0) > MIN_SAVING_S


# A cut "saves time" when some proposal saves more than this per run (not rounding noise).
MIN_SAVING_S = 0.005


def saving_rows(rows: list[ExplosionRow]) -> list[ExplosionRow]:
    """The explosions whose cut saves time or may (values unknown), in the rows' order."""
    return [row for row in rows if not row.saving_known or _saves(row)]


def _reduction_options(top: str, by: str, threshold: str) -> tuple[int, GroupBy, float]:
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
    return top_n, cast(GroupBy, by), ratio


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
    explosions: list[ExplosionRow] | None = None
    all_explosions: list[ExplosionRow] = []
    matrix: Matrix | None = None
    error: str | None = None
    try:
        top_n, group_by, ratio = _reduction_options(top, by, threshold)
        all_explosions = _explosions_by_strength(conn, project, filters, top_n)
        explosions = all_explosions if show == "all" else saving_rows(all_explosions)
        matrix = Matrix.of(
            matrix_recommendation(conn, project, filters, group_by=group_by, threshold=ratio)
        )
    except AnswerError as exc:  # anything else is ours: a logged 500
        error = str(exc)
    context = project_context(
        request,
        conn,
        project,
        "recommendations",
        explosions=explosions,
        explosions_total=len(all_explosions),
        explosions_saving=sum(1 for r in all_explosions if _saves(r)),
        explosions_unknown=sum(1 for r in all_explosions if not r.saving_known),
        show_all=show == "all",
        matrix=matrix,
        strengths=COVERING_STRENGTHS,
        error=error,
        form={"top": top, "by": by, "threshold": threshold},
    )
    return render(request, "reductions.html", context)
