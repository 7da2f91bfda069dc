"""The laptime JSON of the tests, assembled from pytest's reports apart from the hooks that
receive them: a test's identity, parameters and markers from its item; its outcome, attempts
and phases folded from its setup/call/teardown reports; its v1 result entry.

Standard library and pytest only, like the rest of the client; plugin.py's hooks call these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import pytest

from laptime_ci.plugin_heap import HeapReading
from laptime_ci.quarantine_plugin import MESSAGE_PREFIX, QUARANTINED_ATTR

# The attribute carrying the worker-side record on a TestReport (survives xdist serialisation).
REPORT_ATTR = "laptime"

MESSAGE_MAX_CHARS = 2000
PARAM_VALUE_MAX_CHARS = 200
# Markers that drive pytest itself (or a well-known plugin's mechanics) rather than describe
# the test; everything else, the user's own markers included, is kept.
EXCLUDED_MARKERS = frozenset(
    {
        "parametrize",
        "usefixtures",
        "filterwarnings",
        "skip",
        "skipif",
        "xfail",
        "tryfirst",
        "trylast",
        "timeout",  # pytest-timeout
        "flaky",  # pytest-rerunfailures
        "xdist_group",  # pytest-xdist
    }
)
# Values whose repr is short and stable across runs; anything else is named like pytest's own
# automatic ids ("argname0") because its repr may hold a memory address.
_REPR_TYPES = (str, int, float, bool, bytes, complex, type(None))


def _param_text(name: str, value: object, index: int | None) -> str:
    if isinstance(value, _REPR_TYPES):
        text = repr(value)
        if len(text) > PARAM_VALUE_MAX_CHARS:
            text = text[: PARAM_VALUE_MAX_CHARS - 3] + "..."
        return text
    return f"{name}{index if index is not None else ''}"


ParentInfo = tuple[Optional[str], frozenset[str]]


def describe_parent(parent: pytest.Collector | None) -> ParentInfo:
    """Class path and marker names of everything enclosing a test, shared by its siblings."""
    if parent is None:
        return None, frozenset()
    chain = parent.listchain()
    classes = [node.name for node in chain if isinstance(node, pytest.Class)]
    names = frozenset(mark.name for node in chain for mark in node.own_markers)
    return "::".join(classes) or None, names


def describe_item(item: pytest.Item, parent_info: ParentInfo | None = None) -> dict[str, Any]:
    """The static half of a test's record: identity, parameters and markers."""
    nodeid = item.nodeid
    callspec = getattr(item, "callspec", None)
    params: str | None = None
    param_values: dict[str, str] | None = None
    if callspec is not None:
        params = callspec.id
        indices = callspec.indices
        param_values = {
            name: _param_text(name, value, indices.get(name))
            for name, value in callspec.params.items()
        }
    classname, parent_markers = parent_info or describe_parent(item.parent)
    # The same set iter_markers() walks: the item's own marks plus every enclosing node's.
    own = {mark.name for mark in item.own_markers}
    markers = sorted((own | parent_markers) - EXCLUDED_MARKERS)
    return {
        "file": nodeid.split("::", 1)[0],
        "classname": classname,
        "function": getattr(item, "originalname", None) or item.name,
        "params": params,
        "param_values": param_values,
        "markers": markers,
    }


@dataclass
class ItemState:
    """What the reports of one test said so far; a new setup report starts a new attempt."""

    nodeid: str
    attempts: int = 0
    failed_attempts: int = 0
    outcome: str = "passed"
    xfail: bool = False
    message: str | None = None
    failed_now: bool = False
    phases: dict[str, float] = field(default_factory=dict)
    # Seconds of the attempts before the current one: a rerun's time is spent too.
    earlier_s: float = 0.0
    record: dict[str, Any] | None = None
    # Without xdist the item itself is kept (and described once, at session end) with the
    # peak RSS over its attempts: the same record, built off the per-test path.
    item: pytest.Item | None = None
    peak_rss_mib: float | None = None
    cpu_s: float | None = None
    seq: int | None = None
    heap: HeapReading | None = None
    cpu_wait_s: float | None = None
    # A failure the quarantine kept from failing the session (quarantine_plugin.py).
    quarantined: bool = False


def _report_message(report: pytest.TestReport) -> str | None:
    longrepr = report.longrepr
    if longrepr is None:
        return None
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])  # skip: (path, lineno, reason)
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(longrepr)
    return text[:MESSAGE_MAX_CHARS]


def fold_report(state: ItemState, report: pytest.TestReport) -> None:
    """Update one test's state with one phase report (setup, call or teardown)."""
    when = report.when
    outcome = report.outcome
    if when == "setup":
        if state.attempts and state.failed_now:
            state.failed_attempts += 1
        state.attempts += 1
        state.outcome, state.xfail, state.message, state.failed_now = "passed", False, None, False
        state.earlier_s += sum(state.phases.values())
        state.phases = {}
    elif state.attempts == 0:  # a report without setup (an xdist crash report): one attempt
        state.attempts = 1
    if when in ("setup", "call", "teardown"):
        state.phases[when] = float(report.duration)
    # A quarantined failure is a failure in laptime's report, whatever pytest was told.
    quarantined = getattr(report, QUARANTINED_ATTR, False) is True
    if quarantined:
        outcome = "failed"
        state.quarantined = True
    wasxfail = hasattr(report, "wasxfail") and not quarantined
    if outcome == "passed" and not wasxfail:  # the common case: nothing else changes
        if when == "teardown":
            _take_record(state, report)
        return
    failed = outcome in ("failed", "rerun")
    if failed:
        state.failed_now = True
    if wasxfail:
        state.xfail = True
        if state.message is None:
            state.message = str(getattr(report, "wasxfail", "") or "")[:MESSAGE_MAX_CHARS] or None
    if failed:
        if when == "call" or when not in ("setup", "teardown"):
            state.outcome = "failed"
        elif state.outcome != "failed":
            state.outcome = "error"
        if state.message is None:
            state.message = _report_message(report)
    elif outcome == "skipped" and state.outcome == "passed":
        state.outcome = "skipped"
        if state.message is None:
            state.message = _report_message(report)
    if when == "teardown":
        _take_record(state, report)


def _take_record(state: ItemState, report: pytest.TestReport) -> None:
    """Keep the worker-side record, with the peak RSS over all attempts so far."""
    record = getattr(report, REPORT_ATTR, None)
    if isinstance(record, dict):
        previous = state.record.get("peak_rss_mib") if state.record else None
        state.record = record
        peak = record.get("peak_rss_mib")
        if previous is not None and (peak is None or previous > peak):
            record["peak_rss_mib"] = previous


def _split_nodeid(nodeid: str) -> dict[str, Any]:
    """Identity from the nodeid alone, for a test whose worker-side record never arrived."""
    base, bracket, rest = nodeid.partition("[")
    parts = base.split("::")
    return {
        "file": parts[0],
        "classname": "::".join(parts[1:-1]) or None,
        "function": parts[-1],
        "params": rest[:-1] if bracket and rest.endswith("]") else None,
        "param_values": None,
        "markers": None,
        "peak_rss_mib": None,
        "worker": None,
        "cpu_s": None,
        "seq": None,
        "cpu_wait_s": None,
        "gc_s": None,
        "heap_scans": None,
        "heap_objects": None,
    }


def _seconds(value: float | None) -> float | None:
    return round(value, 6) if value is not None else None


def result_entry(state: ItemState, record: dict[str, Any] | None = None) -> dict[str, Any]:
    """The laptime JSON v1 entry of one test (`record` overrides the state's own)."""
    info = record or state.record or _split_nodeid(state.nodeid)
    phases = state.phases
    # xfail counts as skipped (pytest's own convention); xpass keeps "passed".
    return {
        "nodeid": state.nodeid,
        "file": info.get("file"),
        "classname": info.get("classname"),
        "function": info.get("function"),
        "params": info.get("params"),
        "param_values": info.get("param_values"),
        "markers": info.get("markers"),
        "outcome": state.outcome,
        # Every attempt's seconds; the phases are the last attempt's.
        "duration_s": _seconds(state.earlier_s + sum(phases.values())) if phases else None,
        "setup_s": _seconds(phases.get("setup")),
        "call_s": _seconds(phases.get("call")),
        "teardown_s": _seconds(phases.get("teardown")),
        "attempts": max(state.attempts, 1),
        "flaky": state.outcome == "passed" and state.failed_attempts > 0,
        "peak_rss_mib": info.get("peak_rss_mib"),
        # Every attempt's CPU, like duration_s (the window spans the reruns).
        "cpu_s": info.get("cpu_s"),
        "seq": info.get("seq"),
        # Run-queue delay over the same span as cpu_s: the machine's share of the wall.
        "cpu_wait_s": info.get("cpu_wait_s"),
        # Heap-bound work, like cpu_s over every attempt (see plugin_heap).
        "gc_s": info.get("gc_s"),
        "heap_scans": info.get("heap_scans"),
        "heap_objects": info.get("heap_objects"),
        "worker": info.get("worker"),
        "message": MESSAGE_PREFIX + (state.message or "") if state.quarantined else state.message,
        "xfail": state.xfail,
    }
