"""One look for every figure: fonts, colours, margins, and how a figure is embedded in a page."""

from __future__ import annotations

import re

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


# Room for the vertical mode bar (about 25 px wide) beside the plot, never over it.
MODEBAR_ROOM_PX = 44


def _house_template() -> go.layout.Template:
    """plotly_white with the house fonts, colours, margins and axes, built once."""
    template = go.layout.Template(pio.templates["plotly_white"])
    template.layout.update(
        title={"x": 0, "xanchor": "left", "font": {"size": 15}},
        font={"family": FONT, "color": INK, "size": 12},
        # The right margin holds plotly's mode bar, drawn vertically (below): across the top
        # it covered titles and the legend (which sits top right, above the plot).
        margin={"l": 60, "r": MODEBAR_ROOM_PX, "t": 40, "b": 50},
        modebar={"orientation": "v"},
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


# Figure element ids come from code (an index, never a name from a report): they end up in
# HTML attributes and in the script that draws the figure.
_FIGURE_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
# JSON inside <script> ends at the first "</script"; "<!--" changes how the element is parsed;
# U+2028/9 end lines in older JS parsers. Escaped, the JSON means the same.
_SCRIPT_SAFE = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def script_safe_json(json_text: str) -> str:
    """JSON text that can sit inside a <script> element without ending or changing it."""
    return json_text.translate(_SCRIPT_SAFE)


def figure_html(fig: go.Figure, div_id: str) -> str:
    """The figure as an HTML fragment: an empty element and its data as inert JSON.

    No inline script: the page's static script draws every figure (see app/pages/static), so
    the Content-Security-Policy can refuse inline scripts. plotly.js is loaded once per page.
    """
    if not _FIGURE_ID.fullmatch(div_id):
        raise ValueError(f"figure id {div_id!r} must be a plain identifier")
    data = script_safe_json(fig.to_json())
    return (
        f'<div id="{div_id}" class="figure"></div>'
        f'<script type="application/json" class="figure-data" data-figure="{div_id}">'
        f"{data}</script>"
    )


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
