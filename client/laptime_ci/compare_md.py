"""The compare answer as a short text and as markdown that fits a PR comment."""

from __future__ import annotations

from typing import Any

# The marker a sticky comment is found by; hidden in rendered markdown.
MARKER = "<!-- laptime-compare -->"
# GitHub's and GitLab's comment limit, in bytes (GitHub counts characters; bytes are safer).
COMMENT_LIMIT = 65_535
# Room kept for the closing lines after the ranked tables.
_TAIL_ROOM = 600


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _cell(text: str) -> str:
    """A report string made safe in a table cell: no markup, no pipes, no HTML."""
    safe = text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")
    return "`" + safe.replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ") + "`"


def _measure(name: str, m: dict[str, Any]) -> str:
    if m["here"] is None or m["base_median"] is None:
        return f"| {name} | {_s(m['here'])} | {_s(m['base_median'])} | - |"
    delta = m["here"] - m["base_median"]
    return (
        f"| {name} | {_s(m['here'])} | {_s(m['base_median'])} ± {m['base_spread'] or 0:.2f}s "
        f"| {delta:+.2f}s |"
    )


def _vs(name: str, m: dict[str, Any]) -> str:
    """'wall 12.0s vs 10.0s (±0.5)', with '-' for what the runs did not report."""
    if m["here"] is None or m["base_median"] is None:
        return f"{name} {_s(m['here'])} vs {_s(m['base_median'])}"
    return f"{name} {m['here']:.1f}s vs {m['base_median']:.1f}s (±{m['base_spread'] or 0:.1f})"


def _money(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"${value:.4f}" if unit == "USD" else f"{value:.4f} {_cell(unit)}"


def _cost_row(cost: dict[str, Any] | None) -> str | None:
    """The cost row of the measures table (None from a server that sends no cost)."""
    if cost is None:
        return None
    unit = str(cost.get("unit") or "USD")
    delta = cost.get("delta")
    change = "-" if delta is None else ("+" if delta >= 0 else "-") + _money(abs(delta), unit)
    spread = f" ± {_money(cost.get('base_spread') or 0.0, unit)}"
    return (
        f"| cost | {_money(cost.get('here'), unit)} "
        f"| {_money(cost.get('base_median'), unit)}{spread} | {change} |"
    )


def plan_fit_lines(answer: dict[str, Any]) -> list[str]:
    """Lines saying the stored split plan no longer fits (none when it fits or is absent)."""
    fit = answer.get("plan_fit")
    if not fit or fit.get("fits", True):
        return []
    lines = [
        f"split plan {_cell(str(fit['plan_id']))} no longer fits: target wait "
        f"{fit['target_wait_s']:.1f}s, now {fit['wait_s']:.1f}s"
    ]
    lines += [
        f"job {o['index']} {_cell(str(o['name']))}: {o['planned_wall_s']:.1f}s -> "
        f"{o['wall_s']:.1f}s ({o['overrun_s']:.1f}s over)"
        for o in fit.get("overruns", [])
    ]
    return lines


def summary_text(answer: dict[str, Any]) -> str:
    """A few lines for the job log."""
    wall, tests = answer["wall"], answer["test_time"]
    lines = [
        f"laptime compare: pipeline {answer['pipeline']} vs {answer['base']} "
        f"({answer['base_runs']} runs)",
        f"  {_vs('wall', wall)}, {_vs('test time', tests)}",
        f"  {len(answer['slower'])} slower, {len(answer['faster'])} faster, "
        f"{len(answer['new_tests'])} new, {len(answer['removed_tests'])} removed, "
        f"{len(answer['new_failures'])} new failures, {len(answer['flaky'])} flaky",
    ]
    # Older servers answer without these: nothing to say then.
    new_flaky, held = answer.get("new_flaky", []), answer.get("quarantined_failures", [])
    if new_flaky or held:
        lines.append(
            f"  {len(new_flaky)} newly flaky, {len(held)} quarantined failures (not failing)"
        )
    cost = answer.get("cost")
    if cost is not None and cost.get("delta") is not None:
        unit = str(cost.get("unit") or "USD")
        sign = "+" if cost["delta"] >= 0 else "-"
        lines.append(f"  cost per run {sign}{_money(abs(cost['delta']), unit)}")
    lines += [f"  {line}" for line in plan_fit_lines(answer)]
    return "\n".join(lines)


def _size(lines: list[str]) -> int:
    return len("\n".join(lines).encode())


def _moved(m: dict[str, Any]) -> float:
    """Seconds a test moved (new tests: all their time)."""
    return float(abs(m["here_s"] - (m["base_median_s"] or 0.0)))


def _ranked(moves: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(moves, key=_moved, reverse=True)


def markdown(answer: dict[str, Any], *, link: str | None = None, limit: int = COMMENT_LIMIT) -> str:
    """Markdown of the answer, at most `limit` bytes: tables are ranked (biggest move first)
    and cut by rows, with a line saying how many more and where to see them."""
    lines = [
        MARKER,
        f"### laptime: this pipeline vs `{answer['base']}` ({answer['base_runs']} runs)",
        "",
        "| | here | base median ± spread | change |",
        "|---|---|---|---|",
        _measure("wall", answer["wall"]),
        _measure("test time", answer["test_time"]),
    ]
    if answer.get("machine_time"):
        lines.append(_measure("machine time", answer["machine_time"]))
    cost_row = _cost_row(answer.get("cost"))
    if cost_row:
        lines.append(cost_row)
    fit = plan_fit_lines(answer)
    if fit:
        lines += ["", f"**Split plan no longer fits**: {fit[0]}", ""]
        lines += [f"- {line}" for line in fit[1:]]
    sections: list[tuple[str, list[str]]] = [
        ("New failures", [f"- {_cell(n)}" for n in answer["new_failures"]]),
        ("New flaky tests", [f"- {_cell(n)}" for n in answer.get("new_flaky", [])]),
        (
            "Quarantined failures (reported, not failing the job)",
            [f"- {_cell(n)}" for n in answer.get("quarantined_failures", [])],
        ),
        (
            "Slower beyond noise",
            [
                f"| {_cell(m['nodeid'])} | {_s(m['here_s'])} | {_s(m['base_median_s'])} |"
                for m in _ranked(answer["slower"])
            ],
        ),
        (
            "Faster beyond noise",
            [
                f"| {_cell(m['nodeid'])} | {_s(m['here_s'])} | {_s(m['base_median_s'])} |"
                for m in _ranked(answer["faster"])
            ],
        ),
        (
            "New tests",
            [
                f"| {_cell(m['nodeid'])} | {_s(m['here_s'])} | - |"
                for m in _ranked(answer["new_tests"])
            ],
        ),
        ("Known flaky", [f"- {_cell(n)}" for n in answer["flaky"]]),
        ("Removed tests", [f"- {_cell(n)}" for n in answer["removed_tests"]]),
    ]
    for title, rows in sections:
        if not rows:
            continue
        lines += ["", f"**{title}** ({len(rows)})", ""]
        if rows[0].startswith("|"):
            lines += ["| test | here | base median |", "|---|---|---|"]
        kept = 0
        for row in rows:
            if _size([*lines, row]) > limit - _TAIL_ROOM * (len(sections) + 1):
                break
            lines.append(row)
            kept += 1
        if kept < len(rows):
            more = f"…and {len(rows) - kept} more"
            lines += ["", f"{more}: {link}" if link else more]
    if link:
        lines += ["", f"[Full comparison]({link})"]
    return "\n".join(lines) + "\n"
