"""The split plan as a Gantt chart: today's jobs and the proposed ones, setup then tests."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.split.result import PlannedJob, SplitPlan
from figures.humanize import duration_text, time_scale
from figures.plot_text import plot_text, short_name
from figures.theme import SETUP_COLOUR, TEST_COLOUR, empty_figure, styled


def _job_label(job: PlannedJob, index: int) -> str:
    return plot_text(short_name(job.name or f"job {index + 1}"))


def split_gantt_figure(plan: SplitPlan) -> go.Figure:
    """Before/after Gantt of a split plan: one bar per job.

    Jobs run in parallel from zero; a bar is the job's setup overhead followed by its predicted
    test wall, and the dotted line is the pipeline wait (the longest job).
    """
    # Only a split proposes anything; otherwise the second row is today's layout, kept.
    after = "Proposed" if plan.verdict == "split" else "Kept"
    layouts: list[tuple[str, Sequence[PlannedJob]]] = [
        ("Today", plan.before_jobs),
        (after, plan.jobs),
    ]
    if not any(jobs for _, jobs in layouts):
        return empty_figure("The plan has no jobs")
    longest = max(j.wall_s for _, jobs in layouts for j in jobs)
    scale, unit = time_scale(longest)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=[
            f"Today: wait {duration_text(plan.before.wait_s)}",
            f"{after}: wait {duration_text(plan.after.wait_s)}",
        ],
        row_heights=[max(1, len(layouts[0][1])), max(1, len(layouts[1][1]))],
    )
    for row, (_title, jobs) in enumerate(layouts, start=1):
        labels = [f"{_job_label(j, i)} " for i, j in enumerate(jobs)]
        walls = [j.wall_s for j in jobs]
        setups = [min(j.overhead_s, w) for j, w in zip(jobs, walls, strict=True)]
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
                        [duration_text(v), duration_text(w), plot_text(j.n_tests)]
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
