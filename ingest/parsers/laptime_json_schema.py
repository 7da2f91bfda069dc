"""The laptime JSON report schema, version 1, as code (docs/laptime-json.md is the prose).

The field tables drive the parser's validation; JSON_SCHEMA is the same contract as a JSON
Schema (draft 2020-12) document for other tools. A test keeps the two in step.
"""

from __future__ import annotations

from typing import Any, Final

from model.frames import MALLOC_STATES, OUTCOMES

__all__ = [
    "FORMAT_NAME",
    "JSON_SCHEMA",
    "LENIENT_FIELDS",
    "MALLOC_STATES",
    "SCHEMA_VERSION",
    "SESSION_FIELDS",
    "TEST_FIELDS",
    "TEST_REQUIRED",
    "FieldSpec",
]

FORMAT_NAME: Final = "laptime-json"
SCHEMA_VERSION: Final = 1

# kind: "string" | "number" | "integer" | "boolean" | "string-list" | "string-map" |
# "number-map" (string -> number) | "timestamp" (an ISO 8601 string); minimum applies to
# numbers, integers and a number-map's values.
FieldSpec = tuple[str, float | None]

# A job wall beyond a week is a stale start, not a measurement (the upload form agrees).
JOB_WALL_MAX_S: Final = 7 * 24 * 3600.0
# Files in collect_by_file: beyond this the object is not a test suite's collection.
COLLECT_BY_FILE_MAX: Final = 100_000
INVOCATIONS: Final = ("paths", "pyargs")
# The session's malloc is one of MALLOC_STATES (model.frames, which the job model reads).

SESSION_FIELDS: Final[dict[str, FieldSpec]] = {
    "started_at": ("timestamp", None),
    "wall_s": ("number", 0),
    "python": ("string", None),
    "platform": ("string", None),
    "pytest": ("string", None),
    "cpu_count": ("integer", 1),
    "memory_total_mib": ("number", 0),
    "xdist_workers": ("integer", 0),
    "peak_rss_mib": ("number", 0),
    "peak_rss_source": ("string", None),
    # The container's cgroup peak, apart from the test process tree's peak_rss_mib: it counts
    # every process in the container (an earlier pip install too), so sizing never uses it.
    "cgroup_peak_mib": ("number", 0),
    "test_peak_rss_method": ("string", None),
    "hostname": ("string", None),
    # What the job model needs; LENIENT_FIELDS: a bad value is dropped with a warning.
    "cpu_s": ("number", 0),
    "startup_s": ("number", 0),
    "collect_s": ("number", 0),
    "collected_tests": ("integer", 0),
    "collected_files": ("integer", 0),
    "collect_by_file": ("number-map", 0),
    "invocation": ("string", None),
    "rootdir": ("string", None),
    "job_wall_s": ("number", 0),
    # gc-tracked objects at collection start and end and after the last test.
    "heap_objects_start": ("integer", 0),
    "heap_objects_collected": ("integer", 0),
    "heap_objects_end": ("integer", 0),
    # Run-queue delay: seconds the tests' thread(s) were runnable but waiting
    # for a CPU over the session (schedstat), so a busy machine's history can be made quiet.
    "cpu_wait_s": ("number", 0),
    # The state glibc's malloc ran the tests in, one of MALLOC_STATES: under
    # glibc's dynamic thresholds a fresh job process may page-fault what the history served.
    "malloc": ("string", None),
    # Session end to process exit, measured from outside by `laptime-ci run`.
    "exit_s": ("number", 0),
}

TEST_FIELDS: Final[dict[str, FieldSpec]] = {
    "nodeid": ("string", None),
    "file": ("string", None),
    "classname": ("string", None),
    "function": ("string", None),
    "params": ("string", None),
    "param_values": ("string-map", None),
    "markers": ("string-list", None),
    "outcome": ("string", None),
    "duration_s": ("number", 0),
    "setup_s": ("number", 0),
    "call_s": ("number", 0),
    "teardown_s": ("number", 0),
    "attempts": ("integer", 1),
    "flaky": ("boolean", None),
    "peak_rss_mib": ("number", 0),
    "worker": ("string", None),
    "message": ("string", None),
    "xfail": ("boolean", None),
    "cpu_s": ("number", 0),
    "seq": ("integer", 0),
    # Heap-bound time: gc.collect() seconds, heap walks, the heap walked.
    "gc_s": ("number", 0),
    "heap_scans": ("integer", 0),
    "heap_objects": ("integer", 0),
    # Run-queue delay: seconds the test's thread waited for a CPU.
    "cpu_wait_s": ("number", 0),
}
# Present and not null. Every other key may be absent or null (= unknown).
TEST_REQUIRED: Final = ("nodeid", "outcome")
# Keys added after version 1 shipped: an invalid value becomes null with a warning
# instead of rejecting the report, so a measuring bug never costs the run's results.
LENIENT_FIELDS: Final = frozenset(
    {
        "cpu_s",
        "seq",
        "startup_s",
        "collect_s",
        "collected_tests",
        "collected_files",
        "collect_by_file",
        "invocation",
        "rootdir",
        "job_wall_s",
        "gc_s",
        "heap_scans",
        "heap_objects",
        "heap_objects_start",
        "heap_objects_collected",
        "heap_objects_end",
        "cpu_wait_s",
        "malloc",
        "exit_s",
    }
)


def _property(kind: str, minimum: float | None, *, nullable: bool = True) -> dict[str, Any]:
    """The JSON Schema of one field."""
    base: dict[str, Any]
    if kind == "string-list":
        base = {"type": "array", "items": {"type": "string"}}
    elif kind == "string-map":
        base = {"type": "object", "additionalProperties": {"type": "string"}}
    elif kind == "number-map":
        values: dict[str, Any] = {"type": "number"}
        if minimum is not None:
            values["minimum"] = minimum
        return {"anyOf": [{"type": "object", "additionalProperties": values}, {"type": "null"}]}
    elif kind == "timestamp":
        base = {"type": "string", "format": "date-time"}
    else:
        base = {"type": kind}
    if minimum is not None:
        base["minimum"] = minimum
    if nullable:
        return {"anyOf": [base, {"type": "null"}]}
    return base


JSON_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "laptime JSON test report",
    "type": "object",
    "required": ["format", "version", "tests"],
    "properties": {
        "format": {"const": FORMAT_NAME},
        "version": {"type": "integer", "const": SCHEMA_VERSION},
        "session": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {k: _property(*spec) for k, spec in SESSION_FIELDS.items()},
                },
                {"type": "null"},
            ]
        },
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": list(TEST_REQUIRED),
                "properties": {
                    **{
                        k: _property(*spec, nullable=k not in TEST_REQUIRED)
                        for k, spec in TEST_FIELDS.items()
                    },
                    "nodeid": {"type": "string", "minLength": 1},
                    "outcome": {"enum": list(OUTCOMES)},
                },
            },
        },
    },
}
