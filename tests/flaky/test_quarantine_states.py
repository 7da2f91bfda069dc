"""Quarantine entries end by removal, expiry or N clean runs; failures while one holds are
quarantined failures; the export speaks the runner's selection syntax."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from analysis.errors import AnswerError
from analysis.flaky.quarantine import QuarantineEntry, active_nodeids, quarantine_states
from analysis.flaky.quarantine_export import export_quarantine

T0 = datetime(2026, 12, 1, 8, tzinfo=UTC)


def entry(nodeid: str, **kw: object) -> QuarantineEntry:
    fields: dict[str, object] = {
        "id": 1, "nodeid": nodeid, "reason": "", "created_at": T0, "expires_at": None,
        "release_after_runs": None, "removed_at": None,
    }  # fmt: skip
    fields.update(kw)
    return QuarantineEntry(**fields)  # type: ignore[arg-type]


def results(nodeid: str, outcomes: str) -> pd.DataFrame:
    """One result an hour from T0 - 1h: P passed, F failed, R passed on a retry, S skipped."""
    names = {"P": "passed", "F": "failed", "R": "passed", "S": "skipped"}
    start = pd.Timestamp(T0) - pd.Timedelta(hours=1)
    return pd.DataFrame(
        {
            "nodeid": nodeid,
            "started_at": [start + pd.Timedelta(hours=i) for i in range(len(outcomes))],
            "outcome": [names[c] for c in outcomes],
            "flaky": [c == "R" for c in outcomes],
        }
    )


def test_release_after_clean_runs_in_a_row() -> None:
    # The first result is before the entry; then F P R P S P P: the retry breaks the streak.
    frame = results("t::a", "FFPRPSPP")
    (state,) = quarantine_states(
        [entry("t::a", release_after_runs=3)], frame, T0 + timedelta(days=1)
    )
    assert state.state == "released"
    assert state.ended_at == pd.Timestamp(T0) + pd.Timedelta(hours=6)
    assert state.quarantined_failures == 1  # the one before the entry does not count
    (held,) = quarantine_states(
        [entry("t::a", release_after_runs=4)], frame, T0 + timedelta(days=1)
    )
    assert held.state == "active"
    assert held.stable_runs == 3


def test_expiry_and_removal_end_an_entry_and_bound_its_failures() -> None:
    frame = results("t::b", "PFFFF")  # failures at T0, +1h, +2h, +3h
    now = T0 + timedelta(days=2)
    expired, removed, active = quarantine_states(
        [
            entry("t::b", expires_at=T0 + timedelta(minutes=90)),
            entry("t::b", id=2, removed_at=T0 + timedelta(minutes=150)),
            entry("t::b", id=3, expires_at=now + timedelta(days=1)),
        ],
        frame,
        now,
    )
    assert (expired.state, expired.quarantined_failures) == ("expired", 2)
    assert (removed.state, removed.quarantined_failures) == ("removed", 3)
    assert (active.state, active.quarantined_failures) == ("active", 4)
    assert active_nodeids([expired, removed, active]) == frozenset({"t::b"})
    assert active_nodeids([expired, removed]) == frozenset()


def test_export_writes_both_runs_in_the_runners_words() -> None:
    units = pd.Series(
        {
            "example.com/shop/cart::TestAdd": "example.com/shop/cart",
            "example.com/shop/cart::TestTotal": "example.com/shop/cart",
            "example.com/shop/user::TestLogin": "example.com/shop/user",
        }
    )
    go = export_quarantine("go", units, {"example.com/shop/cart::TestTotal", "gone::TestOld"})
    assert go.quarantined == ("example.com/shop/cart::TestTotal",)
    assert go.gating.command == (
        "go test example.com/shop/user && go test example.com/shop/cart -run '^(TestAdd)$'"
    )
    assert go.quarantine.command == "go test example.com/shop/cart -run '^(TestTotal)$'"
    jest = export_quarantine(
        "jest",
        pd.Series(
            {"a.test.js::x": "a.test.js", "a.test.js::y": "a.test.js", "b.test.js::z": "b.test.js"}
        ),
        {"a.test.js::x", "b.test.js::z"},
    )
    assert jest.gating.args == ("a.test.js",)
    assert jest.quarantine.args == ("a.test.js", "b.test.js")
    assert jest.still_gating == ("a.test.js::x",)  # its file holds a test that must gate
    maven = export_quarantine(
        "maven",
        pd.Series(
            {
                "src/test/java/a/B.java::m1": "src/test/java/a/B.java",
                "src/test/java/a/B.java::m2": "src/test/java/a/B.java",
            }
        ),
        {"src/test/java/a/B.java::m2"},
    )
    assert maven.gating.args[0] == "-Dtest=a.B#m1"
    assert maven.quarantine.args[0] == "-Dtest=a.B#m2"
    with pytest.raises(AnswerError):
        export_quarantine("pytest", units, {"example.com/shop/cart::TestTotal"})
    one = pd.Series({"a.test.js::x": "a.test.js"})
    nothing = export_quarantine("jest", one, set())
    # Nothing quarantined: no quarantine command (a bare `jest` would run every test).
    assert (nothing.quarantine.command, nothing.quarantine.args) == ("", ())
    assert nothing.gating.args == ("a.test.js",)
    everything = export_quarantine(
        "jest", pd.Series({"a.test.js::x": "a.test.js"}), {"a.test.js::x"}
    )
    assert (everything.gating.command, everything.gating.args) == ("", ())
