"""A pipeline's wall and machine time as change series: its point, and when it is final.

A pipeline's jobs arrive as separate uploads, in any order and over minutes or hours; its
point can be pushed only once, so it waits until the pipeline is **final**:

- **complete**: every job expected of it is in. The expected jobs are the cells that ran in
  more than half of the last EXPECTED_FROM final pipelines (with their late jobs): one
  cancelled pipeline does not change them, a job added to or taken from the matrix does
  after two pipelines; or
- **overtaken**: OVERTAKEN_BY later pipelines (by their first job's arrival) have started
  arriving, so a job still missing is not coming (it failed before uploading, or was
  cancelled, or left the matrix). Such a pipeline is final but left out of the series: a
  partial sum is no measure of the code. The first pipelines, with nothing expected yet,
  are pushed when overtaken.

"A later pipeline starts arriving" alone is not enough: on a busy default branch pipelines
overlap, and the next one's fast jobs upload before this one's slow job (the one that makes
its wall). Pipelines are pushed in the order their first job arrived; one that is not final
holds the later ones back (for at most OVERTAKEN_BY pipelines).

The point (docs/glossary.md, *pipeline*): `wall` is its longest job's wall, what the developer
waits for; `machine` the sum of its jobs' walls, what is paid for. A job's wall is the one its
job series takes (`run_points.job_wall_of`); a pipeline with a job without one has no point.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from analysis.changes.run_points import job_wall_of

# The pipeline kind's series keys, and how people read each.
PIPELINE_KEYS = ("wall", "machine")
PIPELINE_NAMES: Mapping[str, str] = {"wall": "pipeline wall", "machine": "pipeline machine time"}
# Final pipelines whose jobs say which jobs to expect.
EXPECTED_FROM = 3
# Later pipelines after which one is final whatever it lacks.
OVERTAKEN_BY = 2


@dataclass(frozen=True)
class PendingPipeline:
    """A pipeline not final yet: its jobs' cells so far, and how many pipelines of the
    branch started arriving after it."""

    pipeline: str
    cells: frozenset[int]
    later: int


@dataclass(frozen=True)
class FinalPipeline:
    """A pipeline that is final: pushed into the series, or left out (incomplete)."""

    pipeline: str
    push: bool


def expected_cells(history: Sequence[frozenset[int]]) -> frozenset[int] | None:
    """Cells in more than half of the last EXPECTED_FROM final pipelines (oldest first);
    None when there is none yet."""
    recent = history[-EXPECTED_FROM:]
    if not recent:
        return None
    counts = Counter(cell for cells in recent for cell in cells)
    return frozenset(cell for cell, n in counts.items() if 2 * n > len(recent))


def final_pipelines(
    pending: Sequence[PendingPipeline], history: Sequence[frozenset[int]]
) -> list[FinalPipeline]:
    """The pending pipelines (in arrival order) that are final now, in push order: a prefix,
    since a pipeline not final holds back the later ones. `history`: the cells of the final
    pipelines before them, oldest first."""
    seen = list(history)
    final: list[FinalPipeline] = []
    for one in pending:
        expected = expected_cells(seen)
        complete = expected is not None and expected <= one.cells
        if not complete and one.later < OVERTAKEN_BY:
            break
        final.append(FinalPipeline(one.pipeline, push=complete or expected is None))
        seen.append(one.cells)
    return final


def pipeline_point(jobs: Sequence[Mapping[str, float | None]]) -> dict[str, float] | None:
    """{"wall": longest job wall, "machine": their sum} of a pipeline's jobs (each with
    job_wall_s and wall_s); None when a job has no wall."""
    walls = [job_wall_of(job) for job in jobs]
    known = [w for w in walls if w is not None]
    if not known or len(known) < len(walls):
        return None
    return {"wall": max(known), "machine": sum(known)}
