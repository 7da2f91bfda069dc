"""How a non-pytest runner's snippet closes the loop: start the job clock,
install the runner's JUnit reporter and the CI client, run the job's command writing JUnit
XML with the runner's own flag, then upload the reports with `laptime-ci upload` even when
tests failed, and exit with the tests' status.

The plan's labels (plan and shard) reach the upload through LAPTIME_LABELS, which the
snippet sets for the job (`laptime-ci upload` reads it like the pytest plugin). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.ci.loop import CLIENT_SPEC_VAR, DEFAULT_CLIENT_SPEC, START_CLOCK

REPORT = "laptime-junit.xml"
# Runner images (node, golang, ruby...) may lack a `python`: Debian-based ones get one.
ENSURE_PYTHON = (
    "command -v python >/dev/null || { apt-get update -qq"
    " && apt-get install -y -qq python3-pip python-is-python3; }"
)
_SPEC = f"${{{CLIENT_SPEC_VAR}:-{DEFAULT_CLIENT_SPEC}}}"
INSTALL_CLIENT = f'PIP_BREAK_SYSTEM_PACKAGES=1 python -m pip install "{_SPEC}"'
STATUS = "laptime_status"


@dataclass(frozen=True)
class JunitWay:
    """One runner's way to JUnit XML: a reporter install, the command's wrapping and the
    upload of what it wrote. `wrap` holds `{cmd}`, the selection's (quoted) command."""

    install: str  # shell command installing the reporter ("" when built in)
    wrap: str
    upload: str


def _files(*paths: str) -> str:
    return "laptime-ci upload " + " ".join(paths)


_NPX_MOCHA = f"--reporter-options mochaFile={REPORT}"
# jest-junit names a suite by its first `describe` ("undefined" without one) and prefixes
# each name with it: the suite named by the test file's path is what the plan selects by
# (`--runTestsByPath`), and `describe` blocks are the classname, as the parser reads them.
_JEST_NAMES = (
    "JEST_JUNIT_SUITE_NAME='{filepath}' JEST_JUNIT_CLASSNAME='{classname}'"
    " JEST_JUNIT_TITLE='{title}'"
)
WAYS: dict[str, JunitWay] = {
    # pytest's own snippets upload through the plugin (analysis/ci/loop.py); this is for a
    # pytest command given as a plain selection.
    "pytest": JunitWay("", f"{{cmd}} --junitxml={REPORT}", _files(REPORT)),
    "jest": JunitWay(
        "npm install --no-save jest-junit",
        f"JEST_JUNIT_OUTPUT_FILE={REPORT} {_JEST_NAMES} {{cmd}}"
        " --reporters=default --reporters=jest-junit",
        _files(REPORT),
    ),
    "vitest": JunitWay(
        "",
        f"{{cmd}} --reporter=default --reporter=junit --outputFile.junit={REPORT}",
        _files(REPORT),
    ),
    "mocha": JunitWay(
        "npm install --no-save mocha-junit-reporter",
        f"{{cmd}} --reporter mocha-junit-reporter {_NPX_MOCHA}",
        _files(REPORT),
    ),
    "cypress": JunitWay("", f"{{cmd}} --reporter junit {_NPX_MOCHA}", _files(REPORT)),
    "playwright": JunitWay(
        "", f"PLAYWRIGHT_JUNIT_OUTPUT_NAME={REPORT} {{cmd}} --reporter=junit", _files(REPORT)
    ),
    "rspec": JunitWay(
        "bundle add rspec_junit_formatter --group test",
        f"{{cmd}} --format progress --format RspecJunitFormatter --out {REPORT}",
        _files(REPORT),
    ),
    "phpunit": JunitWay("", f"{{cmd}} --log-junit {REPORT}", _files(REPORT)),
    # `go test -v` output piped through go-junit-report, which keeps the tests' exit code.
    "go": JunitWay(
        "go install github.com/jstemmer/go-junit-report/v2@latest",
        '{ export GOFLAGS="-v ${GOFLAGS:-}"; {cmd}; } 2>&1'
        f' | "$(go env GOPATH)/bin/go-junit-report" -iocopy -set-exit-code -out {REPORT}',
        _files(REPORT),
    ),
    # Surefire and Gradle write JUnit XML by default.
    "maven": JunitWay("", "{cmd}", _files("target/surefire-reports/TEST-*.xml")),
    "gradle": JunitWay("", "{cmd}", _files("build/test-results/test/*.xml")),
    # nextest writes JUnit only for a profile that asks: the snippet adds one.
    "nextest": JunitWay(
        "mkdir -p .config && printf '[profile.laptime.junit]\\npath = \"junit.xml\"\\n'"
        " >> .config/nextest.toml",
        "{cmd} --profile laptime",
        _files("target/nextest/laptime/junit.xml"),
    ),
    "dotnet": JunitWay(
        "dotnet add package JunitXml.TestLogger",
        f'{{cmd}} --logger "junit;LogFilePath=$PWD/{REPORT}"',
        _files(REPORT),
    ),
    "bazel": JunitWay(
        "", "{cmd}", "find -L bazel-testlogs/ -name test.xml -exec laptime-ci upload {} +"
    ),
}


def setup_steps(runner: str) -> list[str]:
    """Shell steps before the tests, clock first: the reporter and the client installed."""
    way = WAYS[runner]
    return [START_CLOCK, *([way.install] if way.install else []), ENSURE_PYTHON, INSTALL_CLIENT]


def run_command(runner: str, command: str) -> str:
    """The job's command writing JUnit; its failure is kept in $laptime_status, not raised."""
    return WAYS[runner].wrap.replace("{cmd}", command, 1) + f" || {STATUS}=$?"


def finish_lines(runner: str) -> list[str]:
    """After the tests: upload whatever they wrote, then exit with the tests' status."""
    return [WAYS[runner].upload, f'exit "${{{STATUS}:-0}}"']
