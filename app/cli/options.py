"""Click options and parameter types several commands share: one definition each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from analysis.split_options import MAX_JOBS, parse_job_range, parse_plan_duration_s

# Report formats the offline commands read; `auto` sniffs each file.
FORMATS = ("auto", "junit", "durations", "laptime-json")
F = TypeVar("F", bound=Callable[..., Any])


def report_format_option(function: F) -> F:
    """`--format` (stored as `fmt`): the report format of the files, default auto."""
    option = click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="auto",
        show_default=True,
        help="Report format of the files.",
    )
    return option(function)


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
