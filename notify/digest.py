"""The weekly digest as markdown (the CLI, the API and a Slack text) and as event data."""

from __future__ import annotations

from typing import Any

from analysis.digest.weekly import Growth, WeeklyDigest


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _name(text: str) -> str:
    """A report string made inert in markdown: a code span with no backticks or newlines."""
    return "`" + text.replace("`", "'").replace("\n", " ").replace("\r", " ") + "`"


def _rows(title: str, grown: tuple[Growth, ...]) -> list[str]:
    if not grown:
        return [f"**{title}**: none grew"]
    lines = [f"**{title}**", "", "| | per run | last week | added per run |", "|---|---|---|---|"]
    for g in grown:
        name = _name(g.name).replace("|", "\\|")
        lines.append(
            f"| {name} | {g.seconds_per_run:.2f}s | {g.previous_seconds_per_run:.2f}s "
            f"| +{g.delta_s:.2f}s |"
        )
    return lines


def digest_markdown(project: str, digest: WeeklyDigest) -> str:
    """The digest as a short markdown page."""
    change = digest.delta_s
    share = f" ({change / digest.previous_ci_time_s:+.1%})" if digest.previous_ci_time_s > 0 else ""
    lines = [
        f"### laptime weekly digest: {_name(project)}, week of {digest.week.isoformat()}",
        "",
        f"CI test time: {_minutes(digest.ci_time_s)} "
        f"(last week {_minutes(digest.previous_ci_time_s)}, "
        f"{'+' if change >= 0 else '-'}{_minutes(abs(change))}{share})",
        "",
        *_rows("Tests that grew most", digest.growing_tests),
        "",
        *_rows("Files that grew most", digest.growing_files),
    ]
    return "\n".join(lines) + "\n"


def _growth_data(grown: tuple[Growth, ...]) -> list[dict[str, Any]]:
    return [
        {
            "name": g.name,
            "seconds_per_run": g.seconds_per_run,
            "previous_seconds_per_run": g.previous_seconds_per_run,
            "delta_s": g.delta_s,
            "runs": g.runs,
            "total_s": g.total_s,
        }
        for g in grown
    ]


def digest_data(project: str, digest: WeeklyDigest) -> dict[str, Any]:
    """The `data` of a "digest.weekly" event (and the API's answer)."""
    return {
        "week": digest.week.isoformat(),
        "previous_week": digest.previous_week.isoformat(),
        "ci_time_s": digest.ci_time_s,
        "previous_ci_time_s": digest.previous_ci_time_s,
        "delta_s": digest.delta_s,
        "growing_tests": _growth_data(digest.growing_tests),
        "growing_files": _growth_data(digest.growing_files),
        "text": digest_markdown(project, digest),
    }
