"""The figure builders on tiny hand-built frames: the numbers plotted are the numbers given."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.split.result import LayoutTotals, PlannedJob, SplitPlan
from figures.history_figures import duration_history_figure, variants_figure
from figures.pipelines import MAX_PIPELINES, job_time_figure, pipeline_time_figure
from figures.plot_text import plot_text, tick_texts
from figures.split_gantt import split_gantt_figure
from figures.theme import figure_html
from figures.time_split import (
    pareto_figure,
    phase_figure,
    share_figure,
    treemap_figure,
    treemap_nodes,
    within_file_figure,
)


def rows(*records: tuple[str, float, str | None]) -> pd.DataFrame:
    """Rollup-like rows: key, total_s, parent (share of a 100 s grand total)."""
    frame = pd.DataFrame(records, columns=["key", "total_s", "parent"])
    frame["share"] = frame["total_s"] / 100.0
    return frame


FILES = rows(("a.py", 100.0, None), ("b.py", 20.0, None))
FUNCTIONS = rows(
    ("a.py::f", 80.0, "a.py"), ("a.py::g", 15.0, "a.py"), ("b.py::h", 20.0, "b.py"),
    ("c.py::z", 5.0, "c.py"),  # its file is not drawn
)  # fmt: skip
TESTS = rows(
    ("a.py::f[1]", 50.0, "a.py::f"), ("a.py::f[2]", 20.0, "a.py::f"), ("a.py::g", 15.0, "a.py::g"),
)  # fmt: skip


def test_treemap_nodes_give_each_parent_only_its_uncovered_time() -> None:
    nodes = treemap_nodes(FILES, FUNCTIONS, TESTS).set_index("id")
    assert nodes["value_s"].to_dict() == {
        "file:a.py": 5.0,  # 100 - (80 + 15)
        "file:b.py": 0.0,  # 20 - 20
        "fn:a.py::f": 10.0,  # 80 - (50 + 20)
        "fn:a.py::g": 15.0,  # its one test is itself: no leaf
        "fn:b.py::h": 20.0,
        "test:a.py::f[1]": 50.0,
        "test:a.py::f[2]": 20.0,
    }
    # In "remainder" mode the drawn area is the files' total time.
    assert nodes["value_s"].sum() == 120.0
    assert nodes.loc["test:a.py::f[1]", "parent"] == "fn:a.py::f"
    assert nodes.loc["fn:a.py::f", "label"] == "f"
    assert nodes.loc["test:a.py::f[2]", "label"] == "f[2]"


def test_treemap_figure_uses_remainder_values_and_shares_of_the_grand_total() -> None:
    fig = treemap_figure(FILES, FUNCTIONS, TESTS, grand_total_s=125.0)
    (trace,) = fig.data
    assert trace.branchvalues == "remainder"
    shares = dict(zip(trace.ids, (c[1] for c in trace.customdata), strict=True))
    assert shares["file:a.py"] == "80.0%"  # 100 of 125
    assert shares["test:a.py::f[1]"] == "40.0%"


def test_pareto_bars_and_cumulative_share() -> None:
    files = rows(("b.py", 30.0, None), ("a.py", 60.0, None), ("c.py", 10.0, None))
    fig = pareto_figure(files, grand_total_s=100.0)
    bars, line = fig.data
    assert list(bars.x) == ["a.py", "b.py", "c.py"]
    assert list(bars.y) == [60.0, 30.0, 10.0]  # under two minutes: seconds
    assert fig.layout.yaxis.title.text == "test time (s)"
    assert list(line.y) == pytest.approx([60.0, 90.0, 100.0])


def test_share_figure_plots_percentages_largest_on_top() -> None:
    fig = share_figure(rows(("slow", 80.0, None), ("(unmarked)", 20.0, None)), title="x")
    (bar,) = fig.data
    assert list(bar.y) == ["(unmarked)", "slow"]  # plotly draws the last row on top
    assert list(bar.x) == [20.0, 80.0]
    assert list(bar.text) == ["20.0%", "80.0%"]


def test_phase_figure_stacks_known_phases_and_says_when_none_are() -> None:
    files = rows(("a.py", 100.0, None))
    files[["setup_s", "call_s", "teardown_s"]] = [[10.0, 85.0, 5.0]]
    fig = phase_figure(files)
    assert [t.name for t in fig.data] == ["setup", "call", "teardown"]
    assert [t.x[0] for t in fig.data] == [10.0, 85.0, 5.0]
    files[["setup_s", "call_s", "teardown_s"]] = np.nan
    blank = phase_figure(files)
    assert not blank.data
    assert "do not split" in blank.layout.annotations[0].text


def test_within_file_figure_plots_parent_share() -> None:
    functions = rows(("t.py::test_augmix", 145.6, "t.py"), ("t.py::test_resize", 27.1, "t.py"))
    functions["parent_share"] = functions["total_s"] / 172.7
    (bar,) = within_file_figure(functions).data
    assert list(bar.y) == ["test_resize", "test_augmix"]
    assert bar.text[1] == "84.3%"


def _job(name: str, wall_s: float, n_tests: int = 0) -> PlannedJob:
    return PlannedJob(name, (), n_tests, wall_s - 300.0, 300.0, 1, None, wall_s, None)


def _plan(before: list[PlannedJob], jobs: list[PlannedJob]) -> SplitPlan:
    def totals(layout: list[PlannedJob]) -> LayoutTotals:
        walls = [j.wall_s for j in layout]
        return LayoutTotals(len(layout), max(walls, default=0.0), sum(walls), None)

    return SplitPlan(
        "split",
        "",
        "wait",
        "file",
        tuple(before),
        tuple(jobs),
        totals(before),
        totals(jobs),
        (),
        pd.DataFrame({"source": []}),
    )


def test_split_gantt_places_tests_after_setup() -> None:
    plan = _plan([_job("all", 3360.0)], [_job("slow", 2280.0, 9), _job("rest", 1500.0, 90)])
    fig = split_gantt_figure(plan)
    titles = [a.text for a in fig.layout.annotations]
    assert titles[:2] == ["Today: wait 56 min", "Proposed: wait 38 min"]
    setup_after, tests_after = fig.data[2], fig.data[3]
    assert list(setup_after.x) == [5.0, 5.0]  # minutes
    assert list(setup_after.base) == [0.0, 0.0]
    assert list(tests_after.x) == [33.0, 20.0]  # (2280 - 300) / 60, (1500 - 300) / 60
    assert list(tests_after.base) == [5.0, 5.0]
    assert fig.layout.xaxis2.title.text == "time since the pipeline started (min)"


def test_pipeline_figure_splits_machine_time_into_tests_and_setup() -> None:
    started = pd.to_datetime(["2026-12-01 10:00", "2026-12-02 10:00"], utc=True)
    pipelines = pd.DataFrame(
        {
            "pipeline": ["p2", "p1"],
            "started_at": started[::-1],
            "wait_s": [300.0, 240.0],
            "machine_s": [430.0, 240.0],
            "setup_overhead_s": [180.0, np.nan],  # p1's walls were estimated
            "critical_job": ["gpu", "cpu"],
        }
    )
    fig = pipeline_time_figure(pipelines)
    wait, tests, setup = fig.data
    assert list(wait.y) == [4.0, 5.0]  # oldest first, minutes
    assert list(tests.y) == pytest.approx([4.0, 250 / 60])
    assert list(setup.y) == pytest.approx([0.0, 3.0])
    assert fig.layout.yaxis2.title.text == "machine time (min)"


def test_job_figure_stacks_test_wall_and_setup() -> None:
    jobs = pd.DataFrame(
        {
            "job": ["gpu", "cpu"],
            "wall_p50_s": [300.0, 130.0],
            "test_wall_p50_s": [150.0, 100.0],
            "setup_overhead_p50_s": [150.0, 30.0],
        }
    )
    tests, setup = job_time_figure(jobs).data
    assert list(tests.y) == ["cpu", "gpu"]
    assert list(tests.x) == pytest.approx([100 / 60, 2.5])
    assert list(setup.x) == pytest.approx([0.5, 2.5])


def test_duration_history_rings_flaky_results() -> None:
    history = pd.DataFrame(
        {
            "started_at": pd.to_datetime(["2026-12-01", "2026-12-02", "2026-12-03"], utc=True),
            "job": ["cpu"] * 3,
            "outcome": ["passed", "passed", "failed"],
            "duration_s": [30.0, 31.0, 5.0],
            "flaky": [False, True, False],
        }
    )
    passed, failed = duration_history_figure(history).data
    assert (passed.name, failed.name) == ("passed", "failed")
    assert list(passed.y) == [30.0, 31.0]
    assert list(passed.marker.symbol) == ["circle", "circle-open"]
    assert list(failed.y) == [5.0]


def test_variants_figure_labels_by_parametrize_id_and_marks_the_current_one() -> None:
    variants = pd.DataFrame(
        {
            "key": ["t.py::f[a]", "t.py::f[b]"],
            "total_s": [60.0, 20.0],
            "mean_s": [30.0, 10.0],
            "parent_share": [0.75, 0.25],
        }
    )
    (bar,) = variants_figure(variants, current="t.py::f[a]").data
    assert list(bar.y) == ["[b]", "[a]"]
    assert list(bar.x) == [10.0, 30.0]
    assert bar.marker.color[1] != bar.marker.color[0]


@pytest.mark.parametrize(
    "fig",
    [
        pipeline_time_figure(
            pd.DataFrame({"started_at": pd.Series([], dtype="datetime64[ns, UTC]")})
        ),
        treemap_figure(FILES.head(0), FUNCTIONS, TESTS, grand_total_s=0.0),
        split_gantt_figure(_plan([], [])),
    ],
)
def test_empty_inputs_say_so(fig: object) -> None:
    assert not fig.data  # type: ignore[attr-defined]
    assert fig.layout.annotations[0].text  # type: ignore[attr-defined]


def test_figure_html_does_not_inline_plotly_js() -> None:
    html = figure_html(share_figure(FILES, title="x"), "fig-x")
    assert 'id="fig-x"' in html
    assert len(html) < 20_000  # plotly.min.js alone is megabytes
    # No inline script: the figure is inert JSON the page's static script draws.
    assert '<script type="application/json" class="figure-data" data-figure="fig-x">' in html
    assert "newPlot" not in html


HOSTILE = '</script><script>alert(1)</script><a href="https://evil.example">x</a>&amp;\u2028'


def test_figure_json_cannot_end_its_script_element() -> None:
    frame = FILES.assign(key=[HOSTILE, "b.py"])
    html = figure_html(share_figure(frame, title=HOSTILE), "fig-x")
    body = html.split('data-figure="fig-x">', 1)[1].removesuffix("</script>")
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in body
    # The JSON still means the same, and plotly gets the text escaped for its HTML renderer.
    figure = json.loads(body)
    assert figure["layout"]["title"]["text"] == plot_text(HOSTILE)
    # The axis shows a short name; the hover carries the whole one, escaped the same way.
    assert plot_text(HOSTILE) in {row[1] for row in figure["data"][0]["customdata"]}


@pytest.mark.parametrize("bad_id", ['x"><script>', "fig label", "fig-\u2028", ""])
def test_figure_ids_must_be_plain(bad_id: str) -> None:
    with pytest.raises(ValueError, match="plain identifier"):
        figure_html(share_figure(FILES, title="x"), bad_id)


def test_plot_text_escapes_what_plotly_renders_as_html() -> None:
    assert plot_text('<b>&"x"</b>') == '&lt;b&gt;&amp;"x"&lt;/b&gt;'


def test_pipelines_are_slots_on_a_category_axis_not_seconds_on_a_time_axis() -> None:
    # Two pipelines seconds apart and one a day later: on a time axis the bars were seconds
    # wide on a day-long axis (invisible) and the wait line joined points a day apart.
    started = pd.to_datetime(
        ["2026-12-01 10:00:00", "2026-12-01 10:00:05", "2026-12-02 10:00:00"], utc=True
    )
    pipelines = pd.DataFrame(
        {
            "pipeline": ["a", "b", "c"],
            "started_at": started,
            "wait_s": [300.0, 240.0, 200.0],
            "machine_s": [430.0, 240.0, 200.0],
            "setup_overhead_s": [30.0, 20.0, 10.0],
            "critical_job": ["gpu", "cpu", "cpu"],
        }
    )
    fig = pipeline_time_figure(pipelines)
    assert fig.layout.xaxis.type == fig.layout.xaxis2.type == "category"
    wait, tests, _ = fig.data
    assert wait.mode == "markers"
    assert list(tests.x) == ["Dec 01 10:00 · a", "Dec 01 10:00 · b", "Dec 02 10:00 · c"]


def test_tick_labels_are_short_distinct_and_keep_the_end() -> None:
    dotnet = "Contoso.Commerce.Ordering.Infrastructure.Persistence.RepositoryTests"
    names = pd.Series([dotnet + "1", dotnet + "2", "x" * 300, "x" * 300, "a.py"])
    labels = list(tick_texts(names))
    assert all(len(label) <= 24 for label in labels), labels
    assert len(set(labels)) == len(labels)
    assert labels[0].endswith("Tests1")
    assert labels[1].endswith("Tests2")
    assert labels[-1] == "a.py"
    # The figure keeps the full name for the hover.
    fig = share_figure(rows((dotnet, 60.0, None), ("b.py", 40.0, None)), title="Share")
    assert max(len(y) for y in fig.data[0].y) <= 16
    assert dotnet in {row[1] for row in fig.data[0].customdata}


def test_many_pipelines_draw_the_latest_few_hundred_with_bars_wide_enough() -> None:
    started = pd.date_range("2026-01-01", periods=1000, freq="h", tz="UTC")[::-1]  # newest first
    pipelines = pd.DataFrame(
        {
            "pipeline": [f"p{i}" for i in range(1000)],
            "started_at": started,
            "wait_s": 60.0,
            "machine_s": 120.0,
            "setup_overhead_s": 10.0,
            "critical_job": "cpu",
        }
    )
    fig = pipeline_time_figure(pipelines)
    assert len(fig.data[1].x) == MAX_PIPELINES
    assert fig.data[1].x[-1].endswith("· p0")  # the newest, last
    assert f"latest {MAX_PIPELINES} of 1000" in fig.layout.annotations[0].text
