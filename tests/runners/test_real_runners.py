"""Plans run by the real runners: a small generated project, a duration history in the
runner's own report dialect, a plan for 3 jobs, then every job's emitted command is run by the
runner itself, and its real report must show each planned test exactly once across jobs.

pytest always runs here. Jest runs when jest@29 and jest-junit@16 install from the local npm
cache (offline). Maven runs when `mvn` and an offline local repository holding
Surefire 3.2.5 and JUnit 5.11 are present (a CI machine without them skips, saying why).
Go and RSpec run when Debian's `golang-go` and `ruby-rspec` are installed (scripts/test.sh
installs them as root); the Go module has no dependencies and runs with GOPROXY=off.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from analysis.split.options import SplitOptions
from analysis.split.plan import SplitPlan, plan_splits
from ingest.parsers import parse_report
from tests.planner.history import run_row, runs_frame
from tests.tools import require, tool_missing

RUN_TIMEOUT_S = 120


def _run(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a runner's command in the project, bounded in time."""
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )


def _require(tool: str, install: str) -> None:
    """A "tools missing" skip, saying how to install it, when the runner is absent."""
    require(tool, tool, install)


def _plan(
    report_bytes: bytes, filename: str, runner: str | None = None
) -> tuple[SplitPlan, list[str]]:
    """A 3-job plan of the history (its runner detected as `runner` when given), and its
    nodeids sorted."""
    report = parse_report(report_bytes, filename=filename)
    assert runner is None or report.runner == runner
    results = report.results.assign(run_id=1)
    runs = runs_frame([run_row(1, wall_s=float(results["duration_s"].sum()) + 1.0)])
    plan = plan_splits(
        results, runs, SplitOptions(jobs=(3, 3), overhead_s=0.0, runner=report.runner)
    )
    assert plan.verdict == "split", plan.reason
    assert runner is None or plan.config["runner"] == runner
    assert len(plan.jobs) == 3
    return plan, sorted(results["nodeid"])


# --- pytest -----------------------------------------------------------------------------

PYTEST_FILES = {
    "test_a.py": "".join(f"def test_a{i}():\n    pass\n\n" for i in range(6)),
    "test_b.py": "class TestB:\n"
    + "".join(f"    def test_b{i}(self):\n        pass\n" for i in range(3)),
    "test_c.py": "import pytest\n\n@pytest.mark.parametrize('x', [1, 2, 3])\n"
    "def test_c(x):\n    pass\n\ndef test_d():\n    pass\n",
}
# Seconds per test in the history: test_a.py weighs more than a job's share, so it is split.
PYTEST_HISTORY = {
    **{("test_a", f"test_a{i}"): 10.0 for i in range(6)},
    **{("test_b.TestB", f"test_b{i}"): 6.0 for i in range(3)},
    **{("test_c", f"test_c[{x}]"): 3.0 for x in (1, 2, 3)},
    ("test_c", "test_d"): 2.0,
}


def _pytest_history() -> bytes:
    cases = "".join(
        f'<testcase classname="{c}" name="{n}" time="{s}"/>' for (c, n), s in PYTEST_HISTORY.items()
    )
    return f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'.encode()


def test_pytest_runs_each_planned_test_exactly_once(tmp_path: Path) -> None:
    for name, body in PYTEST_FILES.items():
        (tmp_path / name).write_text(body)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    plan, planned = _plan(_pytest_history(), "history.xml")
    assert any(len(job.members) and "::" in job.members[0] for job in plan.jobs) or any(
        "--deselect" in job.pytest_args for job in plan.jobs
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    ran: Counter[str] = Counter()
    for i, job in enumerate(plan.jobs):
        argv = shlex.split(job.command)
        assert argv[:3] == ["python", "-m", "pytest"]
        out = tmp_path / f"job{i}.xml"
        done = _run(
            [sys.executable, *argv[1:], f"--junitxml={out}", "-q", "-p", "no:cacheprovider"],
            tmp_path,
            env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        ran.update(parse_report(out.read_bytes()).results["nodeid"])
    assert sorted(ran) == planned
    assert set(ran.values()) == {1}


# --- Maven (Surefire, JUnit 5) ------------------------------------------------------------

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.acme</groupId><artifactId>shop</artifactId><version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId>
      <version>5.11.3</version><scope>test</scope></dependency>
  </dependencies>
  <build><plugins>
    <plugin><artifactId>maven-surefire-plugin</artifactId><version>3.2.5</version></plugin>
    <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
    <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
  </plugins></build>
</project>
"""
JAVA_CLASSES = {"CartTest": 5, "PriceTest": 3, "UserTest": 2, "OrderTest": 1}


def _java_project(root: Path) -> bytes:
    (root / "pom.xml").write_text(POM)
    src = root / "src" / "test" / "java" / "com" / "acme"
    src.mkdir(parents=True)
    suites = []
    for cls, n in JAVA_CLASSES.items():
        methods = "".join(f"  @Test void t{i}() {{}}\n" for i in range(n))
        (src / f"{cls}.java").write_text(
            f"package com.acme;\nimport org.junit.jupiter.api.Test;\nclass {cls} {{\n{methods}}}\n"
        )
        cases = "".join(
            f'<testcase name="t{i}" classname="com.acme.{cls}" time="{4.0 + i}"/>' for i in range(n)
        )
        suites.append(f'<testsuite name="com.acme.{cls}">{cases}</testsuite>')
    return f"<testsuites>{''.join(suites)}</testsuites>".encode()


def test_maven_runs_each_planned_test_exactly_once(tmp_path: Path) -> None:
    _require("mvn", "Debian: apt-get install maven")
    plan, planned = _plan(_java_project(tmp_path), "TEST-history.xml", "maven")
    assert any("#" in job.runner_args[0] for job in plan.jobs)  # a class split by method
    reports = tmp_path / "target" / "surefire-reports"
    ran: Counter[str] = Counter()
    for job in plan.jobs:
        argv = shlex.split(job.command)
        assert argv[:3] == ["mvn", "-B", "test"]
        shutil.rmtree(reports, ignore_errors=True)
        done = _run(["mvn", "-o", "-q", *argv[1:]], tmp_path)
        if done.returncode != 0 and "offline" in done.stdout:
            tool_missing("maven", "the local Maven repository lacks Surefire 3.2.5 / JUnit 5.11")
        assert done.returncode == 0, done.stdout[-3000:]
        for xml in sorted(reports.glob("TEST-*.xml")):
            ran.update(parse_report(xml.read_bytes(), filename=xml.name).results["nodeid"])
    assert sorted(ran) == planned
    assert set(ran.values()) == {1}


# --- Jest (jest-junit) --------------------------------------------------------------------

JEST_FILES = {"a": 6, "b": 3, "c": 2, "d": 1}


def _jest_history() -> bytes:
    suites = "".join(
        f'<testsuite name="tests/{f}.test.js">'
        + "".join(
            f'<testcase classname="{f}{i}" name="{f}{i}" time="{5.0 + i}"/>' for i in range(n)
        )
        + "</testsuite>"
        for f, n in JEST_FILES.items()
    )
    return f'<testsuites name="jest tests">{suites}</testsuites>'.encode()


def test_jest_runs_each_planned_test_exactly_once(tmp_path: Path) -> None:
    _require("npm", "Node.js's npm")
    (tmp_path / "package.json").write_text('{"name": "p", "version": "1.0.0", "private": true}')
    install = _run(
        ["npm", "install", "--offline", "--no-audit", "--no-fund", "jest@29", "jest-junit@16"],
        tmp_path,
    )
    if install.returncode != 0:
        tool_missing("jest", "jest@29 and jest-junit@16 are not in the local npm cache")
    (tmp_path / "tests").mkdir()
    for f, n in JEST_FILES.items():
        body = "".join(f"test('{f}{i}', () => {{}});\n" for i in range(n))
        (tmp_path / "tests" / f"{f}.test.js").write_text(body)
    plan, planned = _plan(_jest_history(), "jest.xml", "jest")
    ran: Counter[str] = Counter()
    for i, job in enumerate(plan.jobs):
        argv = shlex.split(job.command)
        assert argv[:4] == ["npx", "jest", "--ci", "--runTestsByPath"]
        out = tmp_path / f"job{i}.xml"
        env = {
            **os.environ,
            "JEST_JUNIT_OUTPUT_FILE": str(out),
            "JEST_JUNIT_SUITE_NAME": "{filepath}",
            "JEST_JUNIT_CLASSNAME": "{title}",
            "JEST_JUNIT_TITLE": "{title}",
        }
        done = _run([*argv, "--reporters=jest-junit"], tmp_path, env)
        assert done.returncode == 0, done.stdout + done.stderr
        ran.update(parse_report(out.read_bytes()).results["nodeid"])
    assert sorted(ran) == planned
    assert set(ran.values()) == {1}


# --- Go (go-junit-report) -----------------------------------------------------------------

GO_MODULE = "example.com/shop"
# package -> top-level test -> its subtests; every test weighs GO_SECONDS in the history.
# Names that are prefixes of others catch an unanchored `-run` (it would run both).
GO_TESTS: dict[str, dict[str, tuple[str, ...]]] = {
    "cart": {f"Test{v}{s}": () for v in ("Add", "Remove", "Total") for s in ("", "All")},
    "price": {"TestRound": ("half", "even"), "TestTax": (), "TestSum": ()},
    "user": {"TestLogin": (), "TestLogout": ()},
}
GO_SECONDS = {"cart": 10.0, "price": 6.0, "user": 3.0}


@pytest.fixture(scope="session")
def go_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Go's caches in one temp dir for the session (builds are reused), and no network."""
    _require("go", "Debian: apt-get install golang-go")
    root = tmp_path_factory.mktemp("go")
    return {
        **os.environ,
        "GOCACHE": str(root / "cache"),
        "GOPATH": str(root / "path"),
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "GO111MODULE": "on",
    }


def _go_project(root: Path) -> bytes:
    """A dependency-free module with three packages; its history as go-junit-report writes."""
    (root / "go.mod").write_text(f"module {GO_MODULE}\n\ngo 1.19\n")
    suites = []
    for package, tests in GO_TESTS.items():
        (root / package).mkdir()
        funcs, cases = [], []
        for name, subtests in tests.items():
            subs = "".join(f'\tt.Run("{s}", func(t *testing.T) {{}})\n' for s in subtests)
            funcs.append(f"func {name}(t *testing.T) {{\n{subs}}}\n")
            for case in (name, *(f"{name}/{s}" for s in subtests)):
                cases.append(
                    f'<testcase name="{case}" classname="{GO_MODULE}/{package}"'
                    f' time="{GO_SECONDS[package]}"></testcase>'
                )
        body = "".join(funcs)
        (root / package / f"{package}_test.go").write_text(
            f'package {package}\n\nimport "testing"\n\n{body}'
        )
        suites.append(
            f'<testsuite name="{GO_MODULE}/{package}" tests="{len(cases)}"><properties>'
            '<property name="go.version" value="go1.19.8"></property></properties>'
            f"{''.join(cases)}</testsuite>"
        )
    return f"<testsuites>{''.join(suites)}</testsuites>".encode()


def _go_ran(stdout: str) -> list[str]:
    """The nodeids (`package::Test/sub`) of every test `go test -json` reports as started."""
    events = (json.loads(line) for line in stdout.splitlines() if line.startswith("{"))
    return [f"{e['Package']}::{e['Test']}" for e in events if e.get("Action") == "run"]


def test_go_runs_each_planned_test_exactly_once(tmp_path: Path, go_env: dict[str, str]) -> None:
    plan, planned = _plan(_go_project(tmp_path), "go-junit.xml", "go")
    assert any("-run" in job.runner_args for job in plan.jobs)  # a package split by test
    ran: Counter[str] = Counter()
    for job in plan.jobs:
        for command in job.command.split(" && "):
            argv = shlex.split(command)
            assert argv[:2] == ["go", "test"]
            done = _run([*argv, "-json", "-count=1"], tmp_path, go_env)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            ran.update(_go_ran(done.stdout))
    assert sorted(ran) == planned
    assert set(ran.values()) == {1}


# --- RSpec (rspec_junit_formatter) --------------------------------------------------------

RSPEC_FILES = {"cart": 6, "price": 3, "user": 2, "order": 1}


def _rspec_project(root: Path) -> bytes:
    """Four spec files; their history as rspec_junit_formatter writes it."""
    (root / "spec").mkdir()
    cases = []
    for name, n in RSPEC_FILES.items():
        examples = "".join(
            f'  it "does {i}" do\n    expect({i}).to eq({i})\n  end\n' for i in range(n)
        )
        (root / "spec" / f"{name}_spec.rb").write_text(
            f'RSpec.describe "{name.title()}" do\n{examples}end\n'
        )
        cases += [
            f'<testcase classname="spec.{name}_spec" name="{name.title()} does {i}"'
            f' file="./spec/{name}_spec.rb" time="{4.0 + i}"></testcase>'
            for i in range(n)
        ]
    return (
        '<?xml version="1.0" encoding="UTF-8"?><testsuite name="rspec" tests="12">'
        f'<properties><property name="seed" value="1"/></properties>{"".join(cases)}</testsuite>'
    ).encode()


def test_rspec_runs_each_planned_test_exactly_once(tmp_path: Path) -> None:
    _require("rspec", "Debian: apt-get install ruby-rspec")
    history = _rspec_project(tmp_path)
    plan, _ = _plan(history, "rspec.xml", "rspec")
    report = parse_report(history, filename="rspec.xml").results
    planned = sorted(zip(report["file"], report["function"], strict=True))
    ran: Counter[tuple[str, str]] = Counter()
    for i, job in enumerate(plan.jobs):
        argv = shlex.split(job.command)
        assert argv[:3] == ["bundle", "exec", "rspec"]
        out = tmp_path / f"job{i}.json"
        # No Gemfile here: Debian's rspec stands in for `bundle exec rspec`.
        done = _run(["rspec", *argv[3:], "--format", "json", "--out", str(out)], tmp_path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        examples = json.loads(out.read_text())["examples"]
        ran.update((e["file_path"], e["full_description"]) for e in examples)
    assert sorted(ran) == planned
    assert set(ran.values()) == {1}
