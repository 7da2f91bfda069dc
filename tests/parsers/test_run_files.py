"""ingest.run_files: which report files are one run."""

from __future__ import annotations

from ingest.model import ParsedReport, results_frame
from ingest.run_files import run_groups


def _report(fmt: str, *nodeids: str) -> ParsedReport:
    return ParsedReport(format=fmt, results=results_frame({"nodeid": list(nodeids)}))  # type: ignore[arg-type]


ALL = ("a.py::t1", "a.py::t2", "b.py::t3", "b.py::t4")


def test_a_junit_and_its_durations_output_are_one_run_in_either_order() -> None:
    junit, durations = _report("junit", *ALL), _report("durations", *ALL[:3])
    assert run_groups([junit, durations]) == [[0, 1]]
    assert run_groups([durations, junit]) == [[0, 1]]


def test_repeated_runs_of_one_format_stay_apart() -> None:
    assert run_groups([_report("junit", *ALL), _report("junit", *ALL)]) == [[0], [1]]
    assert run_groups([_report("durations", *ALL), _report("durations", *ALL)]) == [[0], [1]]


def test_pairs_of_a_history_find_their_own_file_by_stem() -> None:
    reports = [_report("junit", *ALL), _report("junit", *ALL)]
    reports += [_report("durations", *ALL), _report("durations", *ALL)]
    names = ["run1.xml", "run2.xml", "run2.txt", "run1.txt"]
    assert run_groups(reports, names) == [[0, 3], [1, 2]]


def test_outcome_reports_of_different_formats_join_only_for_the_same_tests() -> None:
    same = run_groups([_report("junit", *ALL), _report("laptime-json", *ALL)])
    assert same == [[0, 1]]
    other = run_groups([_report("laptime-json", *ALL), _report("junit", ALL[0])])
    assert other == [[0], [1]]


def test_unrelated_files_are_runs_of_their_own() -> None:
    assert run_groups([_report("junit", *ALL), _report("durations", "c.py::x")]) == [[0], [1]]
    assert run_groups([_report("junit"), _report("durations")]) == [[0], [1]]
