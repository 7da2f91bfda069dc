"""Each runner's emitted selection against its documented syntax, and a split plan for
three jobs that selects every planned test exactly once, in that runner's terms."""

from __future__ import annotations

import shlex

import pandas as pd
import pytest
import yaml

from analysis.ci.runner_commands import (
    COMMAND_RUNNERS,
    FILE_ONLY,
    java_class_of,
    name_in_unit,
    nodeids_of_members,
    select_jobs,
)
from analysis.ci.snippets import SETUPS, circleci, github_actions, gitlab_ci
from analysis.split.options import SplitOptions
from analysis.split.plan import plan_splits
from ingest.parsers.runners import RUNNERS
from tests.planner.history import run_row, runs_frame


def _units(mapping: dict[str, str]) -> pd.Series:
    return pd.Series(mapping)


def test_every_runner_is_known_to_the_parsers() -> None:
    assert set(COMMAND_RUNNERS) <= set(RUNNERS)
    assert set(COMMAND_RUNNERS) >= FILE_ONLY
    assert set(SETUPS) <= set(COMMAND_RUNNERS)


def test_names_inside_units() -> None:
    assert java_class_of("src/test/java/com/acme/CartTest.java") == "com.acme.CartTest"
    assert java_class_of("com.acme.CartTest") == "com.acme.CartTest"
    assert name_in_unit("oxidized::parry3d::test_failure #2", "oxidized::parry3d") == "test_failure"
    assert name_in_unit("com.acme.CartTest::adds", "src/test/java/com/acme/CartTest.java") == "adds"


def test_jest_runs_exact_paths() -> None:
    units = _units({"a.test.js::x": "src/a.test.js", "b.test.js::y": "src/b.test.js"})
    (sel,) = select_jobs("jest", units, [["a.test.js::x", "b.test.js::y"]])
    # --runTestsByPath: the arguments are exact paths, not regular expressions (Jest CLI docs).
    assert sel.command == "npx jest --ci --runTestsByPath src/a.test.js src/b.test.js"
    assert sel.args == ("src/a.test.js", "src/b.test.js")


@pytest.mark.parametrize(
    ("runner", "command"),
    [
        ("vitest", "npx vitest run spec/a_spec.rb spec/b_spec.rb"),
        ("rspec", "bundle exec rspec spec/a_spec.rb spec/b_spec.rb"),
        ("phpunit", "vendor/bin/phpunit spec/a_spec.rb spec/b_spec.rb"),
        ("playwright", "npx playwright test spec/a_spec.rb spec/b_spec.rb"),
        ("cypress", "npx cypress run --spec spec/a_spec.rb,spec/b_spec.rb"),
    ],
)
def test_file_runners_take_file_lists(runner: str, command: str) -> None:
    units = _units({"t1": "spec/a_spec.rb", "t2": "spec/b_spec.rb"})
    (sel,) = select_jobs(runner, units, [["t1", "t2"]])
    assert sel.command == command


def test_go_packages_whole_and_a_run_regex_for_split_ones() -> None:
    units = _units(
        {
            "example.com/a::TestA": "example.com/a",
            "example.com/b::TestB1": "example.com/b",
            "example.com/b::TestB2/sub": "example.com/b",
            "example.com/b::TestB2/other": "example.com/b",
            "example.com/b::TestB3": "example.com/b",
        }
    )
    first, second = select_jobs(
        "go",
        units,
        [
            ["example.com/a::TestA", "example.com/b::TestB1", "example.com/b::TestB2/sub"],
            ["example.com/b::TestB2/other", "example.com/b::TestB3"],
        ],
    )
    assert first.command == (
        "go test example.com/a && go test example.com/b -run '^(TestB1|TestB2)$'"
    )
    # TestB2 runs with all its subtests in the first job: the second does not repeat it.
    assert second.command == "go test example.com/b -run '^(TestB3)$'"


def test_maven_dtest_classes_and_methods() -> None:
    path = "src/test/java/com/acme/CartTest.java"
    units = _units(
        {
            "com.acme.CartTest::adds": path,
            "com.acme.CartTest::removes": path,
            "com.acme.CartTest::totals": path,
            "com.acme.PriceTest::rounds": "src/test/java/com/acme/PriceTest.java",
        }
    )
    sel, _ = select_jobs(
        "maven",
        units,
        [
            ["com.acme.CartTest::adds", "com.acme.CartTest::removes", "com.acme.PriceTest::rounds"],
            ["com.acme.CartTest::totals"],
        ],
    )
    # Surefire: comma-separated classes, Class#m1+m2 for methods ("Running a Single Test").
    assert sel.args == (
        "-Dtest=com.acme.PriceTest,com.acme.CartTest#adds+removes",
        "-Dsurefire.failIfNoSpecifiedTests=false",
    )
    assert sel.command.startswith("mvn -B test ")


def test_gradle_tests_filters() -> None:
    units = _units({"com.acme.CartTest::adds": "src/test/java/com/acme/CartTest.java", "x::y": "x"})
    (sel,) = select_jobs("gradle", units, [["com.acme.CartTest::adds"]])
    assert sel.command == "./gradlew test --tests com.acme.CartTest"
    sel2, _ = select_jobs(
        "gradle",
        _units(
            {"com.a.B::m": "src/test/java/com/a/B.java", "com.a.B::n": "src/test/java/com/a/B.java"}
        ),
        [["com.a.B::m"], ["com.a.B::n"]],
    )
    assert sel2.args == ("--tests", "com.a.B.m")


def test_nextest_filterset_expression() -> None:
    units = _units(
        {
            "crate::bin::t1": "crate::bin",
            "crate::bin::t2": "crate::bin",
            "crate2::it::weird(1,2)": "crate2::it",
            "crate2::it::other": "crate2::it",
        }
    )
    first, _ = select_jobs(
        "nextest",
        units,
        [["crate::bin::t1", "crate::bin::t2", "crate2::it::weird(1,2)"], ["crate2::it::other"]],
    )
    # binary_id(...) selects a test binary, test(=name) an exact name; "(", ")" and ","
    # are escaped inside matchers (nextest filterset DSL reference).
    assert first.args == (
        "-E",
        r"binary_id(crate::bin) | (binary_id(crate2::it) & test(=weird\(1\,2\)))",
    )
    assert shlex.split(first.command)[:3] == ["cargo", "nextest", "run"]


def test_dotnet_filter_and_plain_list_for_unknown_runners() -> None:
    units = _units({"Ns.C::A": "Ns.C", "Ns.C::B(1)": "Ns.C", "Ns.D::E": "Ns.D"})
    first, _ = select_jobs("dotnet", units, [["Ns.C::A", "Ns.D::E"], ["Ns.C::B(1)"]])
    assert first.args == ("--filter", "FullyQualifiedName~Ns.D.|FullyQualifiedName=Ns.C.A")
    plain, _ = select_jobs("catch2", units, [["Ns.C::A", "Ns.D::E"], ["Ns.C::B(1)"]])
    assert plain.command == ""
    assert plain.args == ("Ns.D", "Ns.C::A")


def test_members_map_back_to_nodeids() -> None:
    estimates = pd.DataFrame(
        {"file": ["a.py", "a.py", "b.py", "b.py"]},
        index=["a.py::T::x", "a.py::T::y", "b.py::z", "b.py::w"],
    )
    assert nodeids_of_members(estimates, [["a.py::T", "b.py::z"], ["b.py"]]) == [
        ["a.py::T::x", "a.py::T::y", "b.py::z"],
        ["b.py::w"],
    ]


def _maven_history() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = []
    for cls, methods in {"CartTest": 4, "PriceTest": 3, "UserTest": 2, "OrderTest": 1}.items():
        for m in range(methods):
            rows.append((f"com.acme.{cls}", f"t{m}", 10.0 + m))
    results = pd.DataFrame(
        {
            "nodeid": [f"{c}::{m}" for c, m, _ in rows],
            "file": [f"src/test/java/{c.replace('.', '/')}.java" for c, _, _ in rows],
            "classname": [c for c, _, _ in rows],
            "function": [m for _, m, _ in rows],
            "params": None,
            "outcome": "passed",
            "duration_s": [s for _, _, s in rows],
            "setup_s": float("nan"),
            "call_s": float("nan"),
            "teardown_s": float("nan"),
            "run_id": 1,
        }
    )
    return results, runs_frame([run_row(1, wall_s=float(results["duration_s"].sum()) + 60)])


@pytest.mark.parametrize("runner", ["maven", "gradle", "jest"])
def test_three_job_plan_selects_each_test_once_in_the_runners_terms(runner: str) -> None:
    results, runs = _maven_history()
    plan = plan_splits(results, runs, SplitOptions(jobs=(3, 3), overhead_s=1.0, runner=runner))
    assert plan.verdict == "split"
    assert len(plan.jobs) == 3
    assert plan.config["runner"] == runner
    assert all(job.pytest_args == () for job in plan.jobs)
    selected: list[str] = []
    for job in plan.jobs:
        if runner == "maven":
            (dtest, _) = job.runner_args
            for entry in dtest.removeprefix("-Dtest=").split(","):
                cls, _, methods = entry.partition("#")
                names = (
                    methods.split("+")
                    if methods
                    else [n.split("::")[1] for n in results["nodeid"] if n.startswith(cls + "::")]
                )
                selected += [f"{cls}::{n}" for n in names]
        elif runner == "gradle":
            for f in job.runner_args[1::2]:
                if f.rsplit(".", 1)[-1].startswith("t"):
                    selected.append("::".join(f.rsplit(".", 1)))
                else:
                    selected += [n for n in results["nodeid"] if n.startswith(f + "::")]
        else:  # jest: whole files
            for path in job.runner_args:
                selected += [
                    n for n, f in zip(results["nodeid"], results["file"], strict=True) if f == path
                ]
    assert sorted(selected) == sorted(results["nodeid"])  # every test, exactly once
    workflow = yaml.safe_load(plan.config["github_actions"])
    entries = workflow["jobs"]["test"]["strategy"]["matrix"]["include"]
    assert [e["command"] for e in entries] == [job.command for job in plan.jobs]
    steps = "\n".join(str(s) for s in workflow["jobs"]["test"]["steps"])
    assert "pip install" in steps  # the laptime client
    assert "laptime-ci upload" in steps
    assert yaml.safe_load(plan.config["gitlab_ci"])["test"]["parallel"] == 3
    assert yaml.safe_load(plan.config["circleci"])["jobs"]["test"]["parallelism"] == 3


def test_jest_plan_keeps_files_whole_and_says_so() -> None:
    results, runs = _maven_history()
    plan = plan_splits(results, runs, SplitOptions(jobs=(3, 3), overhead_s=1.0, runner="jest"))
    assert plan.granularity == "file"
    assert any("whole files" in w for w in plan.warnings)


def test_marker_split_is_pytest_only() -> None:
    with pytest.raises(ValueError, match="pytest only"):
        SplitOptions(granularity="marker", runner="maven")


@pytest.mark.parametrize("runner", sorted(SETUPS))
def test_snippets_use_the_runners_command_and_install(runner: str) -> None:
    from analysis.ci.runner_commands import JobSelection
    from analysis.ci.runner_loop import run_command

    hostile = "a'; rm -rf / #\"\\"
    selections = [
        JobSelection(runner, (hostile,), shlex.join(["run-it", hostile])),
        JobSelection(runner, ("b",), "run-it b"),
    ]
    gha = yaml.safe_load(github_actions(runner, selections))
    assert [e["command"] for e in gha["jobs"]["test"]["strategy"]["matrix"]["include"]] == [
        s.command for s in selections
    ]
    text = str(gha["jobs"]["test"]["steps"])
    assert "pip install" in text  # the laptime client
    assert "laptime-ci upload" in text
    lab = yaml.safe_load(gitlab_ci(runner, selections))
    assert lab["test"]["image"] == SETUPS[runner].image
    script = lab["test"]["script"][0]
    assert f"1) {run_command(runner, selections[0].command)} ;;" in script
    assert shlex.split(selections[0].command)[1] == hostile
    circle = yaml.safe_load(circleci(runner, selections))
    command = circle["jobs"]["test"]["steps"][-1]["run"]["command"]
    assert f"0) {run_command(runner, selections[0].command)} ;;" in command
    assert f"1) {run_command(runner, 'run-it b')} ;;" in command
