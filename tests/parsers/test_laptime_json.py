"""parse_laptime_json: every field round-trips, bad input is rejected with a precise message."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from ingest.model import ReportParseError, SessionInfo
from ingest.parsers.laptime_json import MESSAGE_MAX_CHARS, parse_laptime_json
from ingest.parsers.laptime_json_schema import (
    FORMAT_NAME,
    JSON_SCHEMA,
    SCHEMA_VERSION,
    SESSION_FIELDS,
    TEST_FIELDS,
    TEST_REQUIRED,
)
from model.frames import RESULT_COLUMNS

SESSION: dict[str, Any] = {
    "started_at": "2026-12-02T18:00:00+00:00",
    "wall_s": 12.5,
    "python": "3.11.7",
    "platform": "Linux-6.1-x86_64",
    "pytest": "8.3.2",
    "cpu_count": 2,
    "memory_total_mib": 24000.0,
    "xdist_workers": 2,
    "peak_rss_mib": 812.5,
    "peak_rss_source": "process-tree",
    "cgroup_peak_mib": 4461.0,
    "test_peak_rss_method": "hwm-reset",
    "hostname": "runner-1",
    "cpu_s": 20.25,
    "startup_s": 0.8,
    "collect_s": 1.5,
    "collected_tests": 120,
    "collected_files": 7,
    "collect_by_file": {"tests/test_x.py": 0.75},
    "invocation": "paths",
    "rootdir": "/src/project",
    "job_wall_s": 95.0,
    "heap_objects_start": 41_000,
    "heap_objects_collected": 150_000,
    "heap_objects_end": 420_000,
    "cpu_wait_s": 1.75,
    "malloc": "pinned",
    "exit_s": 0.84,
}
TEST: dict[str, Any] = {
    "nodeid": "tests/test_x.py::TestC::test_y[a-1]",
    "file": "tests/test_x.py",
    "classname": "TestC",
    "function": "test_y",
    "params": "a-1",
    "param_values": {"name": "'a'", "n": "1"},
    "markers": ["slow"],
    "outcome": "passed",
    "duration_s": 0.12,
    "setup_s": 0.01,
    "call_s": 0.1,
    "teardown_s": 0.01,
    "attempts": 1,
    "flaky": False,
    "peak_rss_mib": 120.5,
    "worker": "gw0",
    "message": None,
    "xfail": False,
    "cpu_s": 0.09,
    "seq": 4,
    "gc_s": 0.031,
    "heap_scans": 2,
    "heap_objects": 151_234,
    "cpu_wait_s": 0.02,
}


def document(*tests: dict[str, Any], **top: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": "laptime-json",
        "version": 1,
        "session": copy.deepcopy(SESSION),
        "tests": [copy.deepcopy(t) for t in (tests or (TEST,))],
    }
    doc.update(top)
    return doc


def parse(doc: Any) -> Any:
    return parse_laptime_json(json.dumps(doc).encode(), filename="r.json")


def error(doc: Any) -> ReportParseError:
    with pytest.raises(ReportParseError) as info:
        parse(doc)
    assert info.value.filename == "r.json"
    return info.value


def test_every_field_round_trips() -> None:
    report = parse(document())
    assert report.format == "laptime-json"
    assert report.session == SessionInfo(**SESSION)
    assert list(report.results.columns) == list(RESULT_COLUMNS)
    row = report.results.iloc[0].to_dict()
    for key, value in TEST.items():
        if key in ("xfail", "message"):
            continue
        assert row[key] == value, key
    assert row["message"] is None
    assert row["suite"] is None
    assert report.warnings == []
    assert report.properties == {}
    assert not report.partial


def test_messages_markers_and_reruns() -> None:
    failed = dict(
        TEST,
        nodeid="t.py::f",
        outcome="failed",
        message="assert 1 == 2",
        markers=[],
        attempts=3,
        flaky=True,
        worker=None,
    )
    row = parse(document(failed)).results.iloc[0]
    assert row["message"] == "assert 1 == 2"
    assert row["markers"] == []  # known to have none, not unknown
    assert (row["attempts"], row["flaky"]) == (3, True)
    assert row["outcome"] == "failed"


def test_minimal_tests_derive_parts_and_duration() -> None:
    report = parse(
        document(
            {"nodeid": "a/t.py::C::f[x-1]", "outcome": "error", "setup_s": 1.5, "call_s": 2},
            {"nodeid": "a/t.py::g", "outcome": "skipped"},
        )
    )
    first, second = (r.to_dict() for _, r in report.results.iterrows())
    assert (first["file"], first["classname"], first["function"], first["params"]) == (
        "a/t.py",
        "C",
        "f",
        "x-1",
    )
    assert first["duration_s"] == 3.5  # the known phases: 1.5 + 2
    assert math.isnan(first["teardown_s"])
    assert first["attempts"] == 1
    assert first["flaky"] is False
    assert first["markers"] is None
    assert first["param_values"] is None
    assert math.isnan(second["duration_s"])  # nothing known stays unknown, not 0
    assert second["function"] == "g"


def test_session_is_optional_and_partial() -> None:
    assert parse(document(session=None)).session == SessionInfo()
    doc = document()
    del doc["session"]
    assert parse(doc).session == SessionInfo()
    assert parse(document(session={"hostname": "h", "wall_s": 3})).session == SessionInfo(
        hostname="h", wall_s=3.0
    )


def test_unknown_keys_are_ignored() -> None:
    doc = document(dict(TEST, future_field={"x": 1}), generator="plugin 2.0")
    doc["session"]["gpu"] = "A100"
    report = parse(doc)
    assert len(report.results) == 1
    assert report.session.hostname == "runner-1"


def test_xfail_is_counted_in_properties() -> None:
    report = parse(
        document(
            dict(TEST, nodeid="t.py::a", outcome="skipped", xfail=True),
            dict(TEST, nodeid="t.py::b", outcome="passed", xfail=True),
            dict(TEST, nodeid="t.py::c"),
        )
    )
    assert report.properties == {"xfail_tests": "2"}


def test_duplicate_nodeids_are_rerun_attempts_with_durations_summed() -> None:
    report = parse(
        document(
            dict(TEST, nodeid="t.py::a", duration_s=1.0),
            dict(TEST, nodeid="t.py::b", duration_s=2.0),
            dict(TEST, nodeid="t.py::a", duration_s=3.0),
        )
    )
    assert list(report.results["nodeid"]) == ["t.py::a", "t.py::b"]
    assert list(report.results["duration_s"]) == [4.0, 2.0]
    assert list(report.results["attempts"]) == [2, 1]
    assert report.warnings == [
        "1 repeated nodeid(s) in tests merged as rerun attempts: "
        "durations summed, the last entry's outcome and phases kept"
    ]


def test_long_messages_are_truncated() -> None:
    row = parse(document(dict(TEST, outcome="failed", message="x" * 10_000))).results.iloc[0]
    assert len(row["message"]) == MESSAGE_MAX_CHARS


def test_empty_tests_list() -> None:
    report = parse(document(tests=[]))
    assert report.results.empty
    assert list(report.results.columns) == list(RESULT_COLUMNS)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("duration_s", "abc", 'tests[1].duration_s: expected number, got "abc"'),
        ("duration_s", -1.0, "tests[1].duration_s: expected number >= 0, got -1.0"),
        ("duration_s", True, "tests[1].duration_s: expected number, got true"),
        ("attempts", 0, "tests[1].attempts: expected integer >= 1, got 0"),
        ("attempts", 1.5, "tests[1].attempts: expected integer, got 1.5"),
        ("attempts", 2**40, f"tests[1].attempts: expected integer <= {2**31 - 1}, got {2**40}"),
        ("flaky", "yes", 'tests[1].flaky: expected boolean, got "yes"'),
        ("markers", "slow", 'tests[1].markers: expected array of strings, got "slow"'),
        ("markers", ["slow", 3], "tests[1].markers: expected array of strings, got an item 3"),
        ("param_values", {"n": 1}, "tests[1].param_values: expected object of strings, got 'n': 1"),
        ("outcome", "xfail", 'expected one of passed, failed, error, skipped, got "xfail"'),
        ("outcome", None, "tests[1].outcome: expected string, got null"),
        ("nodeid", "", "tests[1].nodeid: expected a non-empty string"),
        ("nodeid", 7, "tests[1].nodeid: expected string, got 7"),
        ("worker", ["gw0"], "tests[1].worker: expected string, got array"),
    ],
)
def test_bad_test_values(field: str, value: Any, message: str) -> None:
    doc = document(dict(TEST, nodeid="t.py::ok"), dict(TEST, **{field: value}))
    err = error(doc)
    assert err.code == "json-schema"
    assert message in err.message


@pytest.mark.parametrize("field", TEST_REQUIRED)
def test_missing_required_key(field: str) -> None:
    test = dict(TEST)
    del test[field]
    err = error(document(dict(TEST, nodeid="t.py::ok"), dict(TEST, nodeid="t.py::ok2"), test))
    assert (err.code, err.message) == ("json-schema", f"tests[2].{field}: required key missing")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("cpu_count", "2", 'session.cpu_count: expected integer, got "2"'),
        ("cpu_count", 0, "session.cpu_count: expected integer >= 1, got 0"),
        ("started_at", "yesterday", "session.started_at: expected ISO 8601 timestamp string, got"),
        ("wall_s", float("inf"), "session.wall_s: expected a finite number"),
        ("hostname", 5, "session.hostname: expected string, got 5"),
    ],
)
def test_bad_session_values(field: str, value: Any, message: str) -> None:
    doc = document()
    doc["session"][field] = value
    # json.dumps writes inf as the non-JSON token Infinity: check the session validator itself.
    data = json.dumps(doc).replace("Infinity", "1e999").encode()
    with pytest.raises(ReportParseError) as info:
        parse_laptime_json(data)
    assert info.value.code == "json-schema"
    assert message in info.value.message


@pytest.mark.parametrize(
    ("top", "code", "message"),
    [
        ({"version": 2}, "json-version", "version: report version 2 is newer"),
        ({"version": 99}, "json-version", "upgrade"),
        ({"version": "1"}, "json-schema", 'version: expected integer, got "1"'),
        ({"version": 0}, "json-schema", "version: expected 1, got 0"),
        ({"version": True}, "json-schema", "version: expected integer, got true"),
        ({"format": "junit"}, "json-schema", 'format: expected "laptime-json", got "junit"'),
        ({"tests": {}}, "json-schema", "tests: expected array, got object"),
        ({"tests": [1]}, "json-schema", "tests[0]: expected object, got 1"),
        ({"session": []}, "json-schema", "session: expected object, got array"),
    ],
)
def test_bad_document(top: dict[str, Any], code: str, message: str) -> None:
    err = error(document(**top))
    assert err.code == code
    assert message in err.message


@pytest.mark.parametrize("key", ["format", "version", "tests"])
def test_missing_top_level_key(key: str) -> None:
    doc = document()
    del doc[key]
    assert error(doc).message == f"{key}: required key missing"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x89PNG\r\n\x1a\n\x00\x00",
        b'{"format": "laptime-json", "version": 1, "tests": [',
        b'{"format": "laptime-json", "version": 1, "tests": [{"nodeid": "a", "outcome": '
        b'"passed", "duration_s": NaN}]}',
        b"<testsuite/>",
        b"[" * 100_000,
    ],
)
def test_non_json_bytes(data: bytes) -> None:
    with pytest.raises(ReportParseError) as info:
        parse_laptime_json(data, filename="r.json")
    assert info.value.code == "json-malformed"
    assert info.value.message.startswith("not valid JSON")


def test_malformed_json_reports_line_and_column() -> None:
    with pytest.raises(ReportParseError) as info:
        parse_laptime_json(b'{\n  "format": "laptime-json",\n  "version": 1,,\n}')
    # Line 3 is `  "version": 1,,`: the second comma is the 16th character.
    assert (info.value.line, info.value.column) == (3, 16)


def test_top_level_array_is_schema_error() -> None:
    err = error([1, 2])
    assert (err.code, err.message) == ("json-schema", "$: expected object, got array")


def test_schema_dict_matches_the_field_tables() -> None:
    assert FORMAT_NAME == "laptime-json"
    assert SCHEMA_VERSION == 1
    props = JSON_SCHEMA["properties"]
    assert props["version"]["const"] == SCHEMA_VERSION
    session_props = props["session"]["anyOf"][0]["properties"]
    assert set(session_props) == set(SESSION_FIELDS) == set(SESSION)
    test_items = props["tests"]["items"]
    assert set(test_items["properties"]) == set(TEST_FIELDS) == set(TEST)
    assert test_items["required"] == ["nodeid", "outcome"]
    assert test_items["properties"]["outcome"]["enum"] == ["passed", "failed", "error", "skipped"]
    # Every SessionInfo field is fed from the schema, but the runner (set by detection).
    assert set(SESSION_FIELDS) == set(SessionInfo.__dataclass_fields__) - {"runner"}


def test_the_format_doc_names_every_field() -> None:
    # docs/laptime-json.md is the prose of the same contract: a new key is documented there.
    doc = (Path(__file__).parents[2] / "docs" / "laptime-json.md").read_text(encoding="utf-8")
    session_part, tests_part = doc.split("## tests[]", 1)
    assert [k for k in SESSION_FIELDS if f"| `{k}` |" not in session_part] == []
    assert [k for k in TEST_FIELDS if f"`{k}`" not in tests_part.split("## Errors")[0]] == []
