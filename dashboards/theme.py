"""One look for every figure: fonts, colours, margins, and how a figure is embedded in a page."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
INK = "#1f2933"
GRID = "#e4e7eb"
# Colour-blind-safe qualitative palette (Okabe-Ito), in the order series are usually drawn.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999")
TEST_COLOUR = "#0072B2"
SETUP_COLOUR = "#E69F00"
TEARDOWN_COLOUR = "#CC79A7"
OUTCOME_COLOURS = {
    "passed": "#009E73",
    "failed": "#D55E00",
    "error": "#CC79A7",
    "skipped": "#999999",
}
PLOT_CONFIG: dict[str, Any] = {"displaylogo": False, "responsive": True}


def _house_template() -> go.layout.Template:
    """plotly_white with the house fonts, colours, margins and axes, built once."""
    template = go.layout.Template(pio.templates["plotly_white"])
    template.layout.update(
        title={"x": 0, "xanchor": "left", "font": {"size": 15}},
        font={"family": FONT, "color": INK, "size": 12},
        margin={"l": 60, "r": 20, "t": 40, "b": 50},
        paper_bgcolor="white",
        plot_bgcolor="white",
        colorway=list(PALETTE),
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 1, "xanchor": "right"},
        hoverlabel={"font": {"family": FONT}},
        # A template's xaxis/yaxis apply to every axis of a figure (xaxis2... too).
        xaxis={"gridcolor": GRID, "zerolinecolor": GRID, "automargin": True},
        yaxis={"gridcolor": GRID, "zerolinecolor": GRID, "automargin": True},
    )
    return template


# The house look is plotly's default template in this process: setting it property by property
# cost ~10 ms a figure (plotly validates every update), and so does assigning a template to
# each figure; a default template costs a new figure ~0.5 ms.
HOUSE_TEMPLATE = _house_template()
pio.templates["laptime"] = HOUSE_TEMPLATE
pio.templates.default = "laptime"


def styled(fig: go.Figure, *, title: str | None = None, height: int = 360) -> go.Figure:
    """Size and title a figure (the house look is the default template) and return it."""
    layout = fig.layout
    layout.height = height
    if title:
        layout.title.text = title
    else:
        layout.margin.t = 16
    return fig


def empty_figure(message: str, *, height: int = 200) -> go.Figure:
    """A blank figure that says why it is blank (no data in the window...)."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, font={"size": 14, "color": "#7b8794"})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return styled(fig, height=height)


def figure_html(fig: go.Figure, div_id: str) -> str:
    """The figure as an HTML fragment; plotly.js itself is loaded once by the page."""
    html: str = fig.to_html(
        full_html=False, include_plotlyjs=False, div_id=div_id, config=PLOT_CONFIG
    )
    return html


def warm_up() -> None:
    """Build and render one figure of each trace kind the pages draw, so that plotly's
    lazily made validators exist before the server settles its start-up heap."""
    traces = (
        go.Bar(x=[1], y=["a"], orientation="h", text=["a"], customdata=["a"], hovertemplate="x"),
        go.Scatter(x=[1], y=[1], mode="lines+markers", customdata=["a"], hovertemplate="x"),
        go.Treemap(labels=["a"], parents=[""], values=[1], branchvalues="total"),
    )
    for trace in traces:
        fig = styled(go.Figure(trace), title="warm-up")
        fig.update_xaxes(title_text="x")
        fig.update_yaxes(title_text="y")
        figure_html(fig, "warm-up")
