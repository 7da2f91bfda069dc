"""The figure of one change: its series' runs against their start, the step marked between the
last run before and the first after, each side's median and spread drawn over its runs."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from analysis.changes.listing import ChangeItem
from analysis.changes.step_series import SeriesRun
from figures.humanize import duration_text, time_scale
from figures.plot_text import plot_text
from figures.theme import PALETTE, empty_figure, styled

BEFORE_COLOUR, AFTER_COLOUR = PALETTE[0], PALETTE[5]
# The step's line (a shape), told apart from the medians' by its name in the figure's layout.
STEP_SHAPE = "step"


def change_step_figure(change: ChangeItem, points: Sequence[SeriesRun]) -> go.Figure:
    """The change's series around its step (points as app.services.changes.change_series
    reads them), with the medians the change states."""
    if not points:
        return empty_figure("No stored run of this series is left to draw")
    scale, unit = time_scale(max(p.duration_s for p in points))
    before = [p for p in points if not p.after]
    after = [p for p in points if p.after]
    fig = go.Figure()
    for name, side, colour in (("before", before, BEFORE_COLOUR), ("after", after, AFTER_COLOUR)):
        if not side:
            continue
        fig.add_trace(
            go.Scatter(
                x=[p.started_at for p in side],
                y=[p.duration_s / scale for p in side],
                mode="markers",
                name=f"runs {name}",
                marker={"color": colour, "size": 7},
                customdata=[
                    [plot_text((p.commit or "?")[:12]), duration_text(p.duration_s)] for p in side
                ],
                hovertemplate="%{x|%b %d %H:%M}<br>%{customdata[1]} at %{customdata[0]}"
                "<extra></extra>",
            )
        )
    c = change
    _median(
        fig, before[-c.runs_before :], c.median_before_s, c.spread_before_s, scale, BEFORE_COLOUR
    )
    _median(fig, after[: c.runs_after], c.median_after_s, c.spread_after_s, scale, AFTER_COLOUR)
    if before and after:
        step_at = before[-1].started_at + (after[0].started_at - before[-1].started_at) / 2
        fig.add_shape(
            type="line", name=STEP_SHAPE, x0=step_at, x1=step_at, y0=0, y1=1, yref="paper",
            line={"color": "#1f2933", "width": 2, "dash": "dash"},
        )  # fmt: skip
        fig.add_annotation(
            x=step_at, y=1, yref="paper", yanchor="bottom", showarrow=False,
            text=f"step {change.delta_s:+.3g} s ({change.relative:+.0%})",
        )  # fmt: skip
    fig.update_yaxes(title_text=f"duration ({unit})", rangemode="tozero")
    fig.update_xaxes(title_text="run start (UTC)")
    return styled(fig, title="The series around its step", height=380)


def _median(
    fig: go.Figure,
    side: Sequence[SeriesRun],
    median_s: float,
    spread_s: float,
    scale: float,
    colour: str,
) -> None:
    """A side's median as a line over its runs, its spread (one sigma) as a band."""
    if not side:
        return
    x0, x1 = side[0].started_at, side[-1].started_at
    low, high = (median_s - spread_s) / scale, (median_s + spread_s) / scale
    fig.add_shape(
        type="rect", name="spread", x0=x0, x1=x1, y0=low, y1=high,
        fillcolor=colour, opacity=0.15, line={"width": 0},
    )  # fmt: skip
    fig.add_shape(
        type="line", name="median", x0=x0, x1=x1, y0=median_s / scale, y1=median_s / scale,
        line={"color": colour, "width": 2},
    )  # fmt: skip
