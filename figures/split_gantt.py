"""The split plan as a Gantt chart: today's jobs and the proposed ones, setup then tests."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.humanize import duration_text, time_scale
from figures.plot_text import plot_text, short_name
from figures.theme import SETUP_COLOUR, TEST_COLOUR, empty_figure, styled


def _job_label(job: dict[str, Any], index: int) -> str:
    name = str(job.get("name") or f"job {index + 1}")
    return plot_text(short_name(name))


def _wait_s(plan: dict[str, Any], side: str, jobs: list[dict[str, Any]]) -> float:
    totals = plan.get(side) or {}
    if totals.get("wait_s") is not None:
        return float(totals["wait_s"])
    return max((float(j.get("predicted_wall_s") or 0.0) for j in jobs), default=0.0)


def split_gantt_figure(plan: dict[str, Any]) -> go.Figure:
    """Before/after Gantt of a split plan dict (SplitPlan.to_dict()): one bar per job.

    Jobs run in parallel from zero; a bar is the job's setup overhead followed by its predicted
    test wall, and the dotted line is the pipeline wait (the longest job).
    """
    # Only a split proposes anything; otherwise the second row is today's layout, kept.
    after = "Proposed" if plan.get("verdict", "split") == "split" else "Kept"
    layouts = [("Today", plan.get("before_jobs") or []), (after, plan.get("jobs") or [])]
    if not any(jobs for _, jobs in layouts):
        return empty_figure("The plan has no jobs")
    longest = max(float(j.get("predicted_wall_s") or 0.0) for _, jobs in layouts for j in jobs)
    scale, unit = time_scale(longest)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=[
            f"Today: wait {duration_text(_wait_s(plan, 'before', layouts[0][1]))}",
            f"{after}: wait {duration_text(_wait_s(plan, 'after', layouts[1][1]))}",
        ],
        row_heights=[max(1, len(layouts[0][1])), max(1, len(layouts[1][1]))],
    )
    for row, (_title, jobs) in enumerate(layouts, start=1):
        labels = [f"{_job_label(j, i)} " for i, j in enumerate(jobs)]
        walls = [float(j.get("predicted_wall_s") or 0.0) for j in jobs]
        setups = [
            min(float(j.get("overhead_s") or 0.0), w) for j, w in zip(jobs, walls, strict=True)
        ]
        tests = [w - s for w, s in zip(walls, setups, strict=True)]
        for name, values, base, colour in (
            ("job setup", setups, [0.0] * len(jobs), SETUP_COLOUR),
            ("tests", tests, setups, TEST_COLOUR),
        ):
            fig.add_trace(
                go.Bar(
                    y=labels,
                    x=[v / scale for v in values],
                    base=[b / scale for b in base],
                    orientation="h",
                    name=name,
                    legendgroup=name,
                    showlegend=row == 1,
                    marker={"color": colour},
                    customdata=[
                        [duration_text(v), duration_text(w), plot_text(j.get("n_tests", ""))]
                        for v, w, j in zip(values, walls, jobs, strict=True)
                    ],
                    hovertemplate=f"%{{y}}<br>{name} %{{customdata[0]}}"
                    "<br>job wall %{customdata[1]} · %{customdata[2]} tests<extra></extra>",
                ),
                row=row,
                col=1,
            )
        if walls:
            fig.add_vline(
                x=max(walls) / scale, line={"dash": "dot", "color": "#1f2933"}, row=row, col=1
            )
        fig.update_yaxes(autorange="reversed", row=row, col=1)
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(title_text=f"time since the pipeline started ({unit})", row=2, col=1)
    jobs_shown = len(layouts[0][1]) + len(layouts[1][1])
    return styled(
        fig, title="Jobs before and after the split", height=max(300, 140 + 34 * jobs_shown)
    )
