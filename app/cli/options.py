"""Click options and parameter types several commands share: one definition each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from analysis.ci.pytest_selection import INVOCATIONS
from analysis.split.options import MAX_JOBS, parse_job_range, parse_plan_duration_s
from ingest.parsers.runners import RUNNERS

# Report formats the offline commands read; `auto` sniffs each file.
FORMATS = ("auto", "junit", "durations", "laptime-json", "nunit", "trx")
F = TypeVar("F", bound=Callable[..., Any])


RUNNER_META = "laptime.runner"


def _remember_runner(ctx: click.Context, param: click.Parameter, value: str) -> str:
    ctx.meta[RUNNER_META] = value
    return value


def chosen_runner() -> str:
    """The `--runner` of the running command ("auto" outside one, or when not given)."""
    ctx = click.get_current_context(silent=True)
    return str(ctx.meta.get(RUNNER_META, "auto")) if ctx is not None else "auto"


def report_format_option(function: F) -> F:
    """`--format` (stored as `fmt`): the report format of the files, default auto; and
    `--runner`, kept on the click context for `local_reports` so that every command
    reading reports takes it without another parameter."""
    runner = click.option(
        "--runner",
        type=click.Choice(["auto", *RUNNERS]),
        default="auto",
        show_default=True,
        expose_value=False,
        callback=_remember_runner,
        help="Test runner that wrote the reports (selection units, emitted commands).",
    )
    option = click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="auto",
        show_default=True,
        help="Report format of the files.",
    )
    return runner(option(function))


class DurationParam(click.ParamType):  # type: ignore[type-arg]
    """A click parameter for `300`, `90s`, `5m`, `1h30m` (to seconds, at most a week)."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float | None:
        if isinstance(value, float):
            return value
        try:
            return parse_plan_duration_s(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class JobRangeParam(click.ParamType):  # type: ignore[type-arg]
    """A click parameter for a job count `4` or range `2-6` (at most MAX_JOBS jobs)."""

    name = "jobs"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, int]:
        if isinstance(value, tuple):
            return value
        try:
            return parse_job_range(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = DurationParam()
JOB_RANGE = JobRangeParam()
JOBS_HELP = f"at most {MAX_JOBS}"


def report_console() -> Console:
    """A console for tables: the terminal's width, or 200 columns when piped (rich would
    squeeze piped output to 80 columns and fold keys and marks)."""
    width = None if Console().is_terminal else 200
    return Console(width=width, soft_wrap=False)


def invocation_options(function: F) -> F:
    """`--invocation` and `--rootdir`: how the history's pytest named its tests, for
    reports that do not say (JUnit, older laptime JSON); the reports' own word is the default."""
    mode = click.option(
        "--invocation",
        type=click.Choice(["auto", *INVOCATIONS]),
        default="auto",
        show_default=True,
        help="How the history ran pytest: paths, or --pyargs PACKAGE (auto: as the reports say).",
    )
    rootdir = click.option(
        "--rootdir",
        default=None,
        help="The directory the history's nodeids are relative to (pytest's rootdir; under "
        "--pyargs run outside the package, the package's directory). Default: the reports'.",
    )
    return mode(rootdir(function))


NO_ROOTDIR_WARNING = (
    "warning: the history ran pytest --pyargs but its rootdir is unknown: the jobs' "
    "arguments are paths; pass --rootdir (pytest's rootdir of the history run)"
)
