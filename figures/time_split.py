"""Where the test time goes: treemap file -> function -> test, Pareto of files, shares, phases.

Inputs are rollup rows (analysis.rollups.shares.ROW_COLUMNS): `key`, `total_s`, `share`, `parent`...
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from figures.humanize import duration_text, percent_text, time_scale
from figures.plot_text import (
    NARROW_TICK_CHARS,
    SLANTED_TICK_CHARS,
    plot_text,
    plot_texts,
    tick_texts,
)
from figures.theme import (
    SETUP_COLOUR,
    TEARDOWN_COLOUR,
    TEST_COLOUR,
    empty_figure,
    styled,
)


def treemap_nodes(
    files: pd.DataFrame, functions: pd.DataFrame, tests: pd.DataFrame
) -> pd.DataFrame:
    """Treemap nodes (id, label, parent, value_s, total_s) from three rollups.

    `functions` must have been taken within file and `tests` within function, so `parent`
    names the enclosing node. A node's value is its own time not covered by the children
    shown (plotly's "remainder" mode), so cut-off children still count in their parent.
    Tests that are their function (no parametrize variants) are not drawn twice.
    """
    file_ids = "file:" + files["key"].astype(str)
    shown_files = set(files["key"].astype(str))
    fn = functions.loc[functions["parent"].astype(str).isin(shown_files)]
    fn_ids = "fn:" + fn["key"].astype(str)
    shown_fns = set(fn["key"].astype(str))
    leaf = tests.loc[
        tests["parent"].astype(str).isin(shown_fns)
        & (tests["key"].astype(str) != tests["parent"].astype(str))
    ]
    leaf_sum = leaf.groupby("parent")["total_s"].sum()
    fn_own = fn["total_s"] - fn["key"].map(leaf_sum).fillna(0.0)
    fn_sum = fn.groupby("parent")["total_s"].sum()
    file_own = files["total_s"] - files["key"].map(fn_sum).fillna(0.0)
    nodes = pd.concat(
        [
            pd.DataFrame(
                {
                    "id": file_ids,
                    "label": plot_texts(files["key"]),
                    "parent": "",
                    "value_s": file_own,
                    "total_s": files["total_s"],
                }
            ),
            pd.DataFrame(
                {
                    "id": fn_ids,
                    "label": plot_texts(fn["key"].astype(str).str.rsplit("::", n=1).str[-1]),
                    "parent": "file:" + fn["parent"].astype(str),
                    "value_s": fn_own,
                    "total_s": fn["total_s"],
                }
            ),
            pd.DataFrame(
                {
                    "id": "test:" + leaf["key"].astype(str),
                    "label": plot_texts(leaf["key"].astype(str).str.rsplit("::", n=1).str[-1]),
                    "parent": "fn:" + leaf["parent"].astype(str),
                    "value_s": leaf["total_s"],
                    "total_s": leaf["total_s"],
                }
            ),
        ],
        ignore_index=True,
    )
    # Float sums of children can exceed the parent by rounding; a negative remainder is noise.
    nodes["value_s"] = nodes["value_s"].clip(lower=0.0)
    return nodes


def treemap_figure(
    files: pd.DataFrame, functions: pd.DataFrame, tests: pd.DataFrame, *, grand_total_s: float
) -> go.Figure:
    """Treemap file -> function -> parametrize variant, sized by test time."""
    if files.empty or grand_total_s <= 0:
        return empty_figure("No test time in this window")
    nodes = treemap_nodes(files, functions, tests)
    hover = np.column_stack(
        [
            nodes["total_s"].map(duration_text),
            (nodes["total_s"] / grand_total_s).map(percent_text),
        ]
    )
    fig = go.Figure(
        go.Treemap(
            ids=nodes["id"],
            labels=nodes["label"],
            parents=nodes["parent"],
            values=nodes["value_s"],
            branchvalues="remainder",
            customdata=hover,
            texttemplate="%{label}<br>%{customdata[1]}",
            hovertemplate="%{label}<br>%{customdata[0]} · %{customdata[1]} of all test time"
            "<extra></extra>",
            maxdepth=2,
            marker={"line": {"width": 1, "color": "white"}},
            root={"color": "#f5f7fa"},
            pathbar={"visible": True, "thickness": 22},
        )
    )
    return styled(fig, title="Test time: file → function → variant (click to zoom)", height=520)


def pareto_figure(files: pd.DataFrame, *, grand_total_s: float, top: int = 30) -> go.Figure:
    """Bars of the costliest files and the cumulative share line (Pareto chart)."""
    if files.empty or grand_total_s <= 0:
        return empty_figure("No test time in this window")
    ordered = files.sort_values("total_s", ascending=False)
    cumulative = ordered["total_s"].cumsum() / grand_total_s
    head = ordered.head(top)
    scale, unit = time_scale(float(head["total_s"].max()))
    # Short tick labels (long paths and .NET names took most of the chart); full in hover.
    ticks = tick_texts(head["key"], limit=SLANTED_TICK_CHARS)
    names = plot_texts(head["key"])
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=ticks,
            y=head["total_s"] / scale,
            name="test time",
            marker={"color": TEST_COLOUR},
            customdata=np.column_stack(
                [head["total_s"].map(duration_text), head["share"].map(percent_text), names]
            ),
            hovertemplate="%{customdata[2]}<br>%{customdata[0]} · %{customdata[1]}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=ticks,
            y=cumulative.head(top) * 100,
            name="cumulative share",
            yaxis="y2",
            mode="lines+markers",
            line={"color": SETUP_COLOUR},
            customdata=names,
            hovertemplate="%{customdata}<br>first files together: %{y:.1f}%<extra></extra>",
        )
    )
    fig.update_layout(
        yaxis={"title": {"text": f"test time ({unit})"}, "rangemode": "tozero"},
        yaxis2={
            "title": {"text": "cumulative share (%)"},
            "overlaying": "y",
            "side": "right",
            "range": [0, 102],
            "dtick": 20,
            "ticksuffix": "%",
            "showgrid": False,
        },
    )
    fig.update_xaxes(tickangle=-35, title_text=None)
    styled(fig, title="Pareto: files by test time", height=440)
    fig.update_layout(margin={"r": 60, "b": 140})
    return fig


def share_figure(rows: pd.DataFrame, *, title: str, top: int = 15) -> go.Figure:
    """Horizontal bars of each key's share of all test time (markers, jobs, label values)."""
    if rows.empty:
        return empty_figure("No test time in this window")
    head = rows.sort_values("total_s", ascending=False).head(top).iloc[::-1]
    fig = go.Figure(
        go.Bar(
            # Two share charts sit side by side: shorter names than the full-width charts.
            y=tick_texts(head["key"], limit=NARROW_TICK_CHARS),
            x=head["share"] * 100,
            orientation="h",
            marker={"color": TEST_COLOUR},
            text=head["share"].map(percent_text),
            textposition="outside",
            cliponaxis=False,
            customdata=np.column_stack(
                [head["total_s"].map(duration_text), plot_texts(head["key"])]
            ),
            hovertemplate="%{customdata[1]}<br>%{customdata[0]} · %{text}<extra></extra>",
        )
    )
    # Room on the right for the outside labels.
    fig.update_xaxes(
        title_text="share of test time (%)", range=[0, float(head["share"].max()) * 118]
    )
    return styled(fig, title=plot_text(title), height=max(200, 70 + 26 * len(head)))


def phase_figure(files: pd.DataFrame, *, top: int = 12) -> go.Figure:
    """Setup / call / teardown seconds of the costliest files, stacked."""
    known = files.loc[files[["setup_s", "call_s", "teardown_s"]].notna().any(axis=1)]
    if known.empty:
        return empty_figure("These reports do not split setup, call and teardown")
    head = known.sort_values("total_s", ascending=False).head(top).iloc[::-1]
    phases = head[["setup_s", "call_s", "teardown_s"]].fillna(0.0)
    scale, unit = time_scale(float(phases.sum(axis=1).max()))
    fig = go.Figure()
    for column, name, colour in (
        ("setup_s", "setup", SETUP_COLOUR),
        ("call_s", "call", TEST_COLOUR),
        ("teardown_s", "teardown", TEARDOWN_COLOUR),
    ):
        fig.add_trace(
            go.Bar(
                y=tick_texts(head["key"]),
                x=phases[column] / scale,
                name=name,
                orientation="h",
                marker={"color": colour},
                customdata=np.column_stack(
                    [phases[column].map(duration_text), plot_texts(head["key"])]
                ),
                hovertemplate=f"%{{customdata[1]}}<br>{name} %{{customdata[0]}}<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text=f"test time ({unit})", rangemode="tozero")
    return styled(
        fig, title="Setup / call / teardown by file", height=max(220, 70 + 28 * len(head))
    )


def within_file_figure(functions: pd.DataFrame, *, top: int = 25) -> go.Figure:
    """Each function's share of its file (parent_share), largest first."""
    if functions.empty:
        return empty_figure("No functions with test time in this file")
    head = functions.sort_values("total_s", ascending=False).head(top).iloc[::-1]
    functions_of = head["key"].astype(str).str.rsplit("::", n=1).str[-1]
    fig = go.Figure(
        go.Bar(
            y=tick_texts(functions_of),
            x=head["parent_share"] * 100,
            orientation="h",
            marker={"color": TEST_COLOUR},
            text=head["parent_share"].map(percent_text),
            textposition="outside",
            cliponaxis=False,
            customdata=np.column_stack(
                [head["total_s"].map(duration_text), plot_texts(functions_of)]
            ),
            hovertemplate="%{customdata[1]}<br>%{customdata[0]} · %{text} of the file"
            "<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="share of the file's test time (%)", range=[0, 110])
    return styled(fig, title="Functions by share of the file", height=max(200, 70 + 26 * len(head)))
