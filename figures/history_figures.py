"""Figures of one test: its duration over time by outcome, and its parametrize variants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from figures.humanize import duration_text, percent_text, time_scale
from figures.plot_text import plot_texts, tick_texts
from figures.theme import OUTCOME_COLOURS, TEST_COLOUR, empty_figure, styled


def duration_history_figure(history: pd.DataFrame) -> go.Figure:
    """Each result's duration against its run's start, coloured by outcome; flaky ones ringed.

    `history` has started_at, job, outcome, duration_s, flaky (app.db.repository.load_test_history).
    """
    timed = history.loc[history["duration_s"].notna() & history["started_at"].notna()]
    if timed.empty:
        return empty_figure("No timed results in this window")
    scale, unit = time_scale(float(timed["duration_s"].max()))
    fig = go.Figure()
    for outcome, colour in OUTCOME_COLOURS.items():
        part = timed.loc[timed["outcome"] == outcome]
        if part.empty:
            continue
        flaky = part["flaky"].astype(bool).to_numpy()
        fig.add_trace(
            go.Scatter(
                x=part["started_at"].dt.tz_convert(None),
                y=part["duration_s"] / scale,
                mode="markers",
                name=outcome,
                marker={
                    "color": colour,
                    "size": np.where(flaky, 10, 6),
                    "symbol": np.where(flaky, "circle-open", "circle"),
                    "line": {"width": 2, "color": colour},
                },
                customdata=np.column_stack(
                    [
                        part["duration_s"].map(duration_text),
                        plot_texts(part["job"]),
                        np.where(flaky, " · flaky", ""),
                    ]
                ),
                hovertemplate="%{x|%b %d %H:%M}<br>%{customdata[0]} on %{customdata[1]}"
                "%{customdata[2]}<extra>" + outcome + "</extra>",
            )
        )
    fig.update_yaxes(title_text=f"duration ({unit})", rangemode="tozero")
    fig.update_xaxes(title_text="run start (UTC)")
    return styled(fig, title="Duration history", height=380)


def variants_figure(
    variants: pd.DataFrame, *, current: str | None = None, top: int = 40
) -> go.Figure:
    """Mean duration of each parametrize variant of a function (rollup rows by test)."""
    if variants.empty:
        return empty_figure("No parametrize variants")
    head = variants.sort_values("total_s", ascending=False).head(top).iloc[::-1]
    names = head["key"].astype(str).str.extract(r"(\[.*\])$")[0].fillna(head["key"].astype(str))
    labels = tick_texts(names)
    scale, unit = time_scale(float(head["mean_s"].max()))
    colours = np.where(head["key"].astype(str) == (current or ""), "#D55E00", TEST_COLOUR)
    fig = go.Figure(
        go.Bar(
            y=labels,
            x=head["mean_s"] / scale,
            orientation="h",
            marker={"color": colours},
            customdata=np.column_stack(
                [
                    head["mean_s"].map(duration_text),
                    head["parent_share"].map(percent_text),
                    plot_texts(names),
                ]
            ),
            hovertemplate="%{customdata[2]}<br>mean %{customdata[0]} · %{customdata[1]} "
            " of the function"
            "<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=f"mean duration ({unit})", rangemode="tozero")
    return styled(fig, title="Parametrize variants", height=max(200, 70 + 22 * len(head)))
