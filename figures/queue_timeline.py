"""A queue's node timelines: one row per node, one bar per batch (claimed to finished),
coloured by what became of it; the idle tail is shaded from the first node done to the last."""

from __future__ import annotations

import plotly.graph_objects as go

from analysis.queue import QueueReport
from figures.plot_text import plot_text
from figures.theme import SETUP_COLOUR, TEST_COLOUR, empty_figure, styled

STATE_COLOURS = {"finished": TEST_COLOUR, "open": SETUP_COLOUR, "expired": "#c0392b",
                 "released": "#7f8c8d"}  # fmt: skip


def queue_timeline_figure(report: QueueReport) -> go.Figure:
    """Gantt of a queue report: batches per node over seconds since the queue opened."""
    if not any(n.batches for n in report.nodes):
        return empty_figure("No batch has been claimed yet")
    fig = go.Figure()
    for state, colour in STATE_COLOURS.items():
        rows, starts, lengths, texts = [], [], [], []
        for node in report.nodes:
            for batch in node.batches:
                if batch.state != state:
                    continue
                begin = batch.claimed_s
                end = (
                    batch.finished_s if batch.finished_s is not None else begin + batch.predicted_s
                )
                rows.append(plot_text(f"node {node.node} "))
                starts.append(begin)
                lengths.append(max(end - begin, 0.0))
                replay = " replay" if batch.replay else ""
                texts.append(
                    plot_text(
                        f"#{batch.claim_id} attempt {batch.attempt}{replay}: {batch.tests} tests"
                    )
                )
        if rows:
            fig.add_trace(
                go.Bar(
                    y=rows, x=lengths, base=starts, orientation="h", name=state,
                    marker_color=colour, hovertext=texts, hoverinfo="text+x",
                )
            )  # fmt: skip
    finishes = [n.finish_s for n in report.nodes if n.finish_s is not None]
    if len(finishes) > 1:
        fig.add_vrect(
            x0=min(finishes), x1=max(finishes), fillcolor="#f1c40f", opacity=0.2, line_width=0,
            annotation_text="idle tail", annotation_position="top left",
        )  # fmt: skip
    fig.update_layout(barmode="overlay", xaxis_title="seconds since the queue opened")
    return styled(fig)
