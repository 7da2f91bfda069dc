"""The pytest plugin's run-time quarantine (`--laptime-quarantine`).

A failure of a quarantined test is reported as an expected failure (xfail, reason
"quarantined"), so the session does not fail for it; laptime's own report still records it
as a failure ("quarantined failure: ..."), so the test's history goes on. The list is fetched
once per process at session start (LAPTIME_URL, LAPTIME_PROJECT, LAPTIME_READ_TOKEN or
LAPTIME_TOKEN); when it cannot be fetched nothing is quarantined and failures fail, as always.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pytest

# Set on a phase report whose failure the quarantine turned into an expected one; a plain
# JSON-able attribute, so pytest-xdist ships it to the controller with the report.
QUARANTINED_ATTR = "laptime_quarantined"
REASON = "quarantined"
MESSAGE_PREFIX = "quarantined failure: "


def quarantine_option(config: pytest.Config) -> bool:
    """True when `--laptime-quarantine` or LAPTIME_QUARANTINE=1 asks for the quarantine."""
    return bool(config.getoption("laptime_quarantine")) or os.environ.get(
        "LAPTIME_QUARANTINE", ""
    ).lower() in ("1", "true", "yes")


class QuarantinePlugin:
    """Turns failures of quarantined tests into expected failures, and says so at the end."""

    def __init__(self, quarantined: frozenset[str], note: str) -> None:
        self.quarantined = quarantined
        self.note = note
        self.failures: list[str] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """A quarantined test's failed phase becomes an xfail that laptime records as failed."""
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if item.nodeid in self.quarantined and report.failed:
            setattr(report, QUARANTINED_ATTR, True)
            report.outcome = "skipped"
            report.wasxfail = REASON  # type: ignore[attr-defined]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note quarantined failures (here too when xdist ran them in a worker)."""
        if getattr(report, QUARANTINED_ATTR, False) and report.nodeid not in self.failures:
            self.failures.append(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Name the quarantined failures: reported, not failing the session."""
        terminalreporter.write_line(f"laptime: {self.note}")
        for nodeid in self.failures:
            terminalreporter.write_line(f"laptime: quarantined failure (not failing): {nodeid}")


def register_quarantine(config: pytest.Config, env: Mapping[str, str] | None = None) -> None:
    """Fetch the list and register the plugin."""
    # Imported when asked for: the plugin stays cheap for every pytest run that does not.
    from laptime_ci.quarantine import QuarantineError, fetch_quarantined

    env = os.environ if env is None else env
    try:
        quarantined = fetch_quarantined(env)
        note = f"{len(quarantined)} quarantined test(s) from {env.get('LAPTIME_URL')}"
    except QuarantineError as exc:
        quarantined, note = frozenset(), f"quarantine not applied ({exc}): failures fail"
    config.pluginmanager.register(QuarantinePlugin(quarantined, note), "laptime-quarantine")
