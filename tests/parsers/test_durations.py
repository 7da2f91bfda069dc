"""parse_durations on real pytest 3.10-9.x output and on the CI-log variations around it.

The samples in samples/durations/ were produced by running one small suite (tests/test_speed.py
and tests/test_other.py, 10 tests) under each pytest version with --durations=0, --durations=5,
-vv and --durations-min; their rows are identical across versions, so one table of expected
seconds (read off the files by hand) serves every version.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from ingest.model import ReportParseError
from ingest.parsers.durations import (
    OUTCOMES_UNKNOWN_WARNING,
    _split_one,
    parse_durations,
    split_nodeids,
)
from model.frames import RESULT_COLUMNS

SAMPLES = Path(__file__).parent / "samples" / "durations"
VERSIONS = ("3.10", "4.6", "5.4", "6.2", "7.4", "8.3", "9")
LEGACY = {"3.10", "4.6", "5.4"}  # print "(0.00 durations hidden.": count unknown
NAN = math.nan
S = "tests/test_speed.py::"
OTHER = "tests/test_other.py::"

# nodeid -> (setup_s, call_s, teardown_s) of the rows printed with --durations=0.
DURATIONS_0 = {
    S + "test_slow_call": (NAN, 0.12, NAN),
    OTHER + "test_other_one": (NAN, 0.09, NAN),
    S + "TestGroup::test_method": (NAN, 0.07, NAN),
    S + "test_with_fixture": (0.05, 0.02, 0.03),
    S + "test_ip[10.0.0.1]": (NAN, 0.04, NAN),
    S + "test_param[2-x==y]": (NAN, 0.02, NAN),
    S + "test_param[1-a b]": (NAN, 0.01, NAN),
}
DURATIONS_5 = {
    S + "test_slow_call": (NAN, 0.12, NAN),
    OTHER + "test_other_one": (NAN, 0.09, NAN),
    S + "TestGroup::test_method": (NAN, 0.07, NAN),
    S + "test_with_fixture": (0.05, NAN, NAN),
    S + "test_ip[10.0.0.1]": (NAN, 0.04, NAN),
}
# -vv prints every phase: the hidden ones are 0.00.
DURATIONS_VV = {
    S + "test_slow_call": (0.0, 0.12, 0.0),
    OTHER + "test_other_one": (0.0, 0.09, 0.0),
    S + "TestGroup::test_method": (0.0, 0.07, 0.0),
    S + "test_with_fixture": (0.05, 0.02, 0.03),
    S + "test_ip[10.0.0.1]": (0.0, 0.04, 0.0),
    S + "test_param[2-x==y]": (0.0, 0.02, 0.0),
    S + "test_param[1-a b]": (0.0, 0.01, 0.0),
    S + "test_fast": (0.0, 0.0, 0.0),
    S + "TestGroup::test_quick": (0.0, 0.0, 0.0),
    OTHER + "test_other_fast": (0.0, 0.0, 0.0),
}
DURATIONS_MIN = {
    S + "test_slow_call": (NAN, 0.12, NAN),
    OTHER + "test_other_one": (NAN, 0.09, NAN),
    S + "TestGroup::test_method": (NAN, 0.07, NAN),
    S + "test_with_fixture": (0.05, NAN, 0.03),
    S + "test_ip[10.0.0.1]": (NAN, 0.04, NAN),
}


def sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


Phases = dict[str, tuple[float, float, float]]


def phases_by_nodeid(frame: pd.DataFrame) -> Phases:
    cols = frame[["nodeid", "setup_s", "call_s", "teardown_s"]].to_numpy(object)
    return {str(n): (float(s), float(c), float(t)) for n, s, c, t in cols}


def assert_phases(frame: pd.DataFrame, expected: Phases) -> None:
    got = phases_by_nodeid(frame)
    assert set(got) == set(expected)
    for nodeid, phases in expected.items():
        for g, e in zip(got[nodeid], phases, strict=True):
            assert (math.isnan(g) and math.isnan(e)) or g == pytest.approx(e), nodeid


@pytest.mark.parametrize("version", VERSIONS)
def test_durations_0_rows_and_hidden_line(version: str) -> None:
    report = parse_durations(sample(f"pytest-{version}_durations-0.txt"))
    assert report.format == "durations"
    assert list(report.results.columns) == list(RESULT_COLUMNS)
    assert_phases(report.results, DURATIONS_0)
    # Slowest first, as printed.
    assert report.results["nodeid"].iloc[0] == S + "test_slow_call"
    assert report.hidden_threshold_s == pytest.approx(0.005)
    assert report.partial
    if version in LEGACY:
        assert report.hidden_rows is None
        assert report.hidden_rows_unknown
    else:
        assert report.hidden_rows == 21  # 30 phases - 9 printed
        assert not report.hidden_rows_unknown
    assert report.warnings == [OUTCOMES_UNKNOWN_WARNING]


@pytest.mark.parametrize("version", VERSIONS)
def test_durations_0_sums_known_phases(version: str) -> None:
    frame = parse_durations(sample(f"pytest-{version}_durations-0.txt")).results.set_index("nodeid")
    assert frame.loc[S + "test_with_fixture", "duration_s"] == pytest.approx(0.05 + 0.02 + 0.03)
    assert frame.loc[S + "test_slow_call", "duration_s"] == pytest.approx(0.12)
    assert frame["duration_s"].sum() == pytest.approx(0.45)
    assert (frame["outcome"] == "passed").all()
    assert frame["markers"].isna().all()  # unknown, not "no markers"


@pytest.mark.parametrize("version", VERSIONS)
def test_durations_5_is_a_top_n_list(version: str) -> None:
    report = parse_durations(sample(f"pytest-{version}_durations-5.txt"))
    assert_phases(report.results, DURATIONS_5)
    assert report.hidden_rows is None
    assert report.hidden_threshold_s is None
    assert report.hidden_rows_unknown  # 5 of 5 shown: the rest were cut, uncounted
    assert report.partial
    assert any("slowest 5 phases" in w for w in report.warnings)


@pytest.mark.parametrize("version", VERSIONS)
def test_vv_shows_every_phase_and_hides_nothing(version: str) -> None:
    report = parse_durations(sample(f"pytest-{version}_durations-0_vv.txt"))
    assert_phases(report.results, DURATIONS_VV)
    assert report.hidden_rows is None
    assert report.hidden_threshold_s is None
    assert not report.hidden_rows_unknown
    assert not report.partial
    assert report.results["duration_s"].sum() == pytest.approx(0.45)


@pytest.mark.parametrize("version", ["6.2", "9"])
def test_explicit_durations_min_threshold(version: str) -> None:
    # 6.2 keeps the "Use -vv" hint, 9.x drops it when --durations-min is explicit.
    report = parse_durations(sample(f"pytest-{version}_durations-min_q.txt"))
    assert_phases(report.results, DURATIONS_MIN)
    assert report.hidden_rows == 24  # 30 - 6 printed
    assert report.hidden_threshold_s == pytest.approx(0.03)
    assert not report.hidden_rows_unknown


def test_xdist_verbose_log() -> None:
    report = parse_durations(sample("pytest-8.3_xdist_v.txt"))
    assert_phases(report.results, DURATIONS_0)
    assert report.hidden_rows == 21


def test_nodeid_parts_on_real_sample() -> None:
    frame = parse_durations(sample("pytest-9_durations-0.txt")).results.set_index("nodeid")
    method = frame.loc[S + "TestGroup::test_method"]
    assert (method["file"], method["classname"], method["function"]) == (
        "tests/test_speed.py",
        "TestGroup",
        "test_method",
    )
    assert pd.isna(method["params"])
    spaced = frame.loc[S + "test_param[1-a b]"]
    assert (spaced["function"], spaced["params"]) == ("test_param", "1-a b")
    assert pd.isna(spaced["classname"])
    assert frame.loc[S + "test_param[2-x==y]", "params"] == "2-x==y"
    assert frame.loc[S + "test_ip[10.0.0.1]", "params"] == "10.0.0.1"


def section_lines(name: str) -> list[str]:
    """The header, rows, blank and hidden lines of a sample (no session header/footer)."""
    lines = sample(name).decode().splitlines()
    start = next(i for i, line in enumerate(lines) if "slowest" in line)
    return lines[start : start + 12]  # header + 9 rows + blank + hidden line


def github(lines: list[str]) -> str:
    # GitHub Actions stamps each line; the stamp of a blank line loses its trailing space.
    out = []
    for i, line in enumerate(lines):
        stamp = f"2026-09-11T15:05:{i % 60:02d}.{3104947 + i * 977:07d}Z"
        out.append(f"{stamp} {line}" if line else stamp)
    return "\n".join(out) + "\n"


def test_github_actions_prefix() -> None:
    text = github(["Run pytest --durations=0", *section_lines("pytest-8.3_durations-0.txt")])
    report = parse_durations(text.encode())
    assert_phases(report.results, DURATIONS_0)
    assert report.hidden_rows == 21
    assert report.hidden_threshold_s == pytest.approx(0.005)


def test_bamboo_prefix_across_midnight() -> None:
    lines = section_lines("pytest-5.4_durations-0.txt")
    stamps = ["08-Jul-2016 23:59:59"] * 5 + ["09-Jul-2016 00:00:01"] * (len(lines) - 5)
    text = "".join(f"build\t{s}\t{line}\n" for s, line in zip(stamps, lines, strict=True))
    report = parse_durations(text.encode())
    assert_phases(report.results, DURATIONS_0)
    assert report.hidden_rows_unknown
    assert report.hidden_threshold_s == pytest.approx(0.005)


def test_indented_paste_with_crlf_and_trailing_blanks() -> None:
    lines = [
        "    " + line + ("  " if "::" in line else "")
        for line in section_lines("pytest-7.4_durations-0.txt")
    ]
    report = parse_durations(("\r\n".join(lines) + "\r\n").encode())
    assert_phases(report.results, DURATIONS_0)
    assert report.hidden_rows == 21


def test_right_aligned_durations() -> None:
    text = (
        "==== slowest durations ====\n"
        "  0.12s call     a.py::t1\n"
        "123.45s setup    a.py::t2\n"
        "====== 2 passed in 124.00s ======\n"
    )
    report = parse_durations(text.encode())
    assert_phases(report.results, {"a.py::t1": (NAN, 0.12, NAN), "a.py::t2": (123.45, NAN, NAN)})
    assert not report.partial


def test_repeated_rows_are_rerun_attempts_summed_with_a_warning() -> None:
    text = (
        "=== slowest durations ===\n"
        "0.50s call     a.py::t\n"
        "0.40s call     a.py::t\n"
        "0.30s setup    a.py::t\n"
        "0.30s setup    a.py::t\n"
        "0.20s call     a.py::u\n"
        "=== 2 passed ===\n"
    )
    report = parse_durations(text.encode())
    # pytest-rerunfailures: every attempt's phases are printed; the machine paid for all.
    assert_phases(report.results, {"a.py::t": (0.6, 0.9, NAN), "a.py::u": (NAN, 0.2, NAN)})
    t = report.results.set_index("nodeid").loc["a.py::t"]
    assert t["duration_s"] == pytest.approx(1.5)
    assert t["attempts"] == 2
    assert "2 durations rows repeat a nodeid and phase" in report.warnings[0]


def test_section_embedded_in_a_long_log() -> None:
    noise = "".join(f"tests/test_{i}.py::test_{i} PASSED  [{i % 100}%]\n" for i in range(5000))
    text = (
        "def helper():\n    '''Example: 0.12s call     fake.py::test_doc'''\n"
        + noise
        + "".join(line + "\n" for line in section_lines("pytest-9_durations-0.txt"))
        + "=========================== short test summary info ===\n"
        + "0.99s call     after.py::not_a_row\n"  # a row-looking line past the section
        + noise
    )
    report = parse_durations(text.encode())
    assert_phases(report.results, DURATIONS_0)
    assert report.hidden_rows == 21


def test_rows_end_at_the_first_non_row_line() -> None:
    text = (
        "=== slowest 10 durations ===\n"
        "0.30s call     a.py::t\n"
        "some stray line\n"
        "0.20s call     a.py::u\n"
    )
    report = parse_durations(text.encode())
    assert list(report.results["nodeid"]) == ["a.py::t"]
    assert not report.hidden_rows_unknown  # 1 row < limit 10


def test_two_sessions_in_one_log_are_combined() -> None:
    text = (
        "=== slowest durations ===\n0.30s call     a.py::t\n\n"
        "(3 durations < 0.005s hidden.  Use -vv to show these durations.)\n=== 1 passed ===\n"
        "=== slowest durations ===\n0.20s call     b.py::u\n\n"
        "(2 durations < 0.01s hidden.  Use -vv to show these durations.)\n=== 1 passed ===\n"
    )
    report = parse_durations(text.encode())
    assert list(report.results["nodeid"]) == ["a.py::t", "b.py::u"]
    assert report.hidden_rows == 5
    assert report.hidden_threshold_s == pytest.approx(0.01)


def test_everything_hidden_gives_empty_partial_report() -> None:
    text = (
        "=== slowest durations ===\n\n"
        "(6 durations < 0.005s hidden.  Use -vv to show these durations.)\n=== 2 passed ===\n"
    )
    report = parse_durations(text.encode())
    assert report.results.empty
    assert list(report.results.columns) == list(RESULT_COLUMNS)
    assert report.hidden_rows == 6
    assert report.partial
    assert "the durations section has no rows" in report.warnings


def test_legacy_class_instance_segment_is_dropped() -> None:
    text = "=== slowest test durations ===\n0.10s call     a.py::TestX::()::test_y\n"
    frame = parse_durations(text.encode()).results
    assert list(frame["nodeid"]) == ["a.py::TestX::test_y"]
    assert frame["classname"].iloc[0] == "TestX"


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"============ 3 passed in 0.12s ============\n",
        b"'''docstring: 0.12s call     x.py::test_doc'''\n",
        b"we looked at the slowest durations = quite slow\n",
    ],
)
def test_missing_section_is_an_error(text: bytes) -> None:
    with pytest.raises(ReportParseError) as info:
        parse_durations(text, filename="job.log")
    assert info.value.code == "durations-missing"
    assert info.value.filename == "job.log"
    assert "--durations" in info.value.message


def test_split_nodeids_cases() -> None:
    ids = [
        "a.py::C::D::t[x::y-[1]]",
        "a.py::t",
        "a.py",
        "a.py::t[]",
        "dir/b.py::C::t",
    ]
    parts = split_nodeids(ids)
    assert parts.to_dict("records") == [
        {"file": "a.py", "classname": "C::D", "function": "t", "params": "x::y-[1]"},
        {"file": "a.py", "classname": None, "function": "t", "params": None},
        {"file": "a.py", "classname": None, "function": "a.py", "params": None},
        {"file": "a.py", "classname": None, "function": "t", "params": ""},
        {"file": "dir/b.py", "classname": "C", "function": "t", "params": None},
    ]


def test_split_nodeids_slow_path_agrees_with_fast_path() -> None:
    ids = ["a.py::C::D::t[x::y-[1]]", "a.py::t", "a.py", "a.py::t[]", "dir/b.py::C::t"]
    fast = split_nodeids(ids)
    # An id the regex rejects (a colon in the function name) sends the whole list to the
    # slow path; the other rows must come out the same.
    slow = split_nodeids([*ids, "c.py::odd:name"])
    assert slow.iloc[:-1].to_dict("records") == fast.to_dict("records")
    assert slow.iloc[-1].to_dict() == {
        "file": "c.py",
        "classname": None,
        "function": "odd:name",
        "params": None,
    }
    assert _split_one("a.py::C::t[p]") == ("a.py::C::", "t", "p")


def test_split_nodeids_empty() -> None:
    assert split_nodeids([]).empty
