"""Figures of CI pipeline time: developer wait and machine time over time, job walls by job."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.humanize import duration_text, time_scale
from figures.plot_text import plot_texts, tick_texts
from figures.theme import SETUP_COLOUR, TEST_COLOUR, empty_figure, styled

# One slot per pipeline: past a few hundred a bar is narrower than a pixel. The latest ones
# are drawn (the frame comes newest first); the title says how many.
MAX_PIPELINES = 200


def pipeline_time_figure(pipelines: pd.DataFrame) -> go.Figure:
    """Per pipeline, oldest first: the wait (longest job) above, machine time (tests + setup)
    below.

    `pipelines` has analysis.rollups.pipelines.PIPELINE_COLUMNS. The x axis is one slot per
    pipeline, not a time axis: on a day-long time axis a bar is seconds wide (invisible), and a line
    between two pipelines a day apart suggests values nobody measured.
    """
    all_dated = pipelines.loc[pipelines["started_at"].notna()]
    dated = all_dated.head(MAX_PIPELINES)
    if dated.empty:
        return empty_figure("No pipelines with a start time in this window")
    dated = dated.sort_values("started_at")
    scale, unit = time_scale(float(dated["machine_s"].max()))
    wait_scale, wait_unit = time_scale(float(dated["wait_s"].max()))
    started = dated["started_at"].dt.tz_convert("UTC").dt.strftime("%b %d %H:%M")
    x = tick_texts(started + " · " + dated["pipeline"].astype(str), limit=24)
    setup = dated["setup_overhead_s"].astype(float)
    # Machine time not known to be setup (estimated walls) counts as tests.
    tests = dated["machine_s"].astype(float) - setup.fillna(0.0)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=(
            "Developer wait per pipeline"
            + (
                f" (latest {len(dated)} of {len(all_dated)})" if len(all_dated) > len(dated) else ""
            ),
            "Machine time per pipeline",
        ),
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=dated["wait_s"] / wait_scale,
            mode="markers",
            name="wait",
            marker={"size": 7, "color": "#1f2933"},
            customdata=np.column_stack(
                [
                    dated["wait_s"].map(duration_text),
                    plot_texts(dated["critical_job"]),
                    plot_texts(dated["pipeline"]),
                    started,
                ]
            ),
            hovertemplate="%{customdata[3]}<br>wait %{customdata[0]}"
            "<br>critical job %{customdata[1]}<br>pipeline %{customdata[2]}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    for name, values, colour in (
        ("tests", tests, TEST_COLOUR),
        ("job setup", setup.fillna(0.0), SETUP_COLOUR),
    ):
        fig.add_trace(
            go.Bar(
                x=x,
                y=values / scale,
                name=name,
                marker={"color": colour},
                customdata=np.column_stack([values.map(duration_text), started]),
                hovertemplate=f"%{{customdata[1]}}<br>{name} %{{customdata[0]}}<extra></extra>",
            ),
            row=2,
            col=1,
        )
    fig.update_layout(barmode="stack", bargap=0.15)
    # Subplot titles left, clear of the legend at the top right (centred, they met at 800 px).
    fig.update_annotations(x=0, xanchor="left")
    fig.update_yaxes(title_text=f"wait ({wait_unit})", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text=f"machine time ({unit})", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(x))
    fig.update_xaxes(title_text="pipeline, by start (UTC)", row=2, col=1)
    return styled(fig, height=520)


def job_time_figure(jobs: pd.DataFrame) -> go.Figure:
    """Median job wall per job, split into test wall and setup overhead (JOB_COLUMNS rows)."""
    if jobs.empty:
        return empty_figure("No jobs in this window")
    ordered = jobs.sort_values("wall_p50_s", ascending=True)
    setup = ordered["setup_overhead_p50_s"].astype(float).clip(lower=0)
    tests = ordered["test_wall_p50_s"].astype(float)
    scale, unit = time_scale(float((setup.fillna(0) + tests).max()))
    labels = tick_texts(ordered["job"])
    fig = go.Figure()
    for name, values, colour in (
        ("tests", tests, TEST_COLOUR),
        ("job setup", setup.fillna(0.0), SETUP_COLOUR),
    ):
        fig.add_trace(
            go.Bar(
                y=labels,
                x=values / scale,
                orientation="h",
                name=name,
                marker={"color": colour},
                customdata=np.column_stack([values.map(duration_text), plot_texts(ordered["job"])]),
                hovertemplate=f"%{{customdata[1]}}<br>{name} %{{customdata[0]}} (median)"
                "<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text=f"median job wall ({unit})", rangemode="tozero")
    return styled(fig, title="Job wall: tests vs setup", height=max(220, 60 + 28 * len(jobs)))
