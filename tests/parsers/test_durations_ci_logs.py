"""`--durations` sections as CI systems' logs really print them.

Each fixture in samples/durations/ci/ is a job log in that system's own line format (see the
comments in each case), around the same 10-test session as the version samples, so the
expected rows are test_durations.DURATIONS_0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.parsers import parse_report
from tests.parsers.test_durations import DURATIONS_0, assert_phases

CI = Path(__file__).parent / "samples" / "durations" / "ci"


@pytest.mark.parametrize(
    ("name", "hidden_rows"),
    [
        # pytest 5 era: "=== slowest test durations ===", a blank line, then the rows.
        ("pytest5_blank_after_header.txt", None),
        # Bamboo: "build\t08-Jul-2016 08:46:49\t..." with simple/command/error lines around.
        ("bamboo.log", None),
        # Jenkins Timestamper: "[2024-05-01T10:00:00.123Z] ", "[Pipeline]" lines unstamped.
        ("jenkins_timestamper.log", None),
        # Azure Pipelines: 7-digit timestamps, ##[section]/##[group]/##[command] markers.
        ("azure.log", 21),
        # GitLab trace: section_start/section_end markers with "\r\e[0K", ANSI colours.
        ("gitlab.log", 21),
        # GitLab FF_TIMESTAMPS: "2024-05-01T10:00:00.100000Z 01O " before each line.
        ("gitlab_timestamps.log", 21),
    ],
)
def test_ci_log_formats(name: str, hidden_rows: int | None) -> None:
    report = parse_report((CI / name).read_bytes(), filename=name)
    assert report.format == "durations"
    assert_phases(report.results, DURATIONS_0)
    if hidden_rows is None:
        assert report.hidden_rows_unknown  # pytest 5: "(0.00 durations hidden."
    else:
        assert report.hidden_rows == hidden_rows
    assert report.hidden_threshold_s == pytest.approx(0.005)


def test_ansi_colours_anywhere_are_ignored() -> None:
    text = (CI / "pytest5_blank_after_header.txt").read_text()
    coloured = "".join(
        f"\x1b[1m{line}\x1b[0m\n" if line.startswith("=") else f"\x1b[32m{line}\x1b[0m\n"
        for line in text.splitlines()
    )
    assert_phases(parse_report(coloured.encode()).results, DURATIONS_0)
