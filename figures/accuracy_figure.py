"""Did it come true: each planned job's predicted wall against its measured wall."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from analysis.accuracy.plan_accuracy import PlanAccuracy
from figures.plot_text import plot_text
from figures.theme import TEST_COLOUR, empty_figure, styled


def accuracy_figure(plans: Sequence[PlanAccuracy]) -> go.Figure:
    """One point per measured job (the plans the accuracy answer holds): predicted wall across,
    measured wall up; on the dotted diagonal the plan came true."""
    points = [
        (plan, pipeline, job)
        for plan in plans
        for pipeline in plan.pipelines
        for job in pipeline.jobs
        if job.wall.predicted is not None and job.wall.measured is not None
    ]
    if not points:
        return empty_figure("No job has run a plan yet: upload reports with their plan id")
    predicted = [float(job.wall.predicted or 0.0) for _, _, job in points]
    measured = [float(job.wall.measured or 0.0) for _, _, job in points]
    # Names come from reports (pipelines) and plans (job names): shown literally.
    labels = [
        plot_text(f"plan {plan.plan.id} · {pipeline.pipeline} · {job.name}")
        for plan, pipeline, job in points
    ]
    top = max(*predicted, *measured) * 1.05
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, top],
            y=[0, top],
            mode="lines",
            line={"dash": "dot", "color": "#9aa5b1"},
            name="came true",
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=predicted,
            y=measured,
            mode="markers",
            marker={"color": TEST_COLOUR, "size": 9},
            name="jobs",
            text=labels,
            hovertemplate="%{text}<br>predicted %{x:.1f} s<br>measured %{y:.1f} s<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="predicted wall (s)", range=[0, top])
    fig.update_yaxes(title_text="measured wall (s)", range=[0, top])
    return styled(fig, height=380)
