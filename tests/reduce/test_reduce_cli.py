"""`laptime reduce parametrize|matrix` through click's CliRunner on real report files."""

from __future__ import annotations

import itertools
import json

import click
import pytest
from click.testing import CliRunner

from app.cli.main import cli
from app.cli.reduce_cmd import parse_file_spec


def _laptime_json(path, tests, python=None):
    session = {"started_at": "2024-01-01T10:00:00+00:00"}
    if python:
        session["python"] = python
    doc = {"format": "laptime-json", "version": 1, "session": session, "tests": tests}
    path.write_text(json.dumps(doc))
    return path


def _augmix_tests():
    names = ("fill", "severity", "all_ops")
    values = (("None", "128", "[255, 0, 0]"), ("1", "10"), ("True", "False"))
    tests = []
    for combo in itertools.product(*values):
        pid = "-".join(combo)
        tests.append(
            {
                "nodeid": f"test/test_t.py::test_augmix[{pid}]",
                "file": "test/test_t.py",
                "function": "test_augmix",
                "params": pid,
                "param_values": dict(zip(names, combo, strict=True)),
                "outcome": "passed",
                "duration_s": 2.0,
            }
        )
    return tests


def test_parametrize_text_and_json(tmp_path):
    report = _laptime_json(tmp_path / "run.json", _augmix_tests())
    runner = CliRunner()
    result = runner.invoke(cli, ["reduce", "parametrize", str(report), "--strength", "1"])
    assert result.exit_code == 0, result.output
    assert "test/test_t.py::test_augmix: 12 variants, 24.0 s per run" in result.output
    assert "values: plugin" in result.output
    assert "strength 1: 3 of 12 variants" in result.output
    assert "24.0 s -> 6.0 s per run, saves 18.0 s (75%)" in result.output
    assert "@pytest.mark.parametrize(" in result.output

    result = runner.invoke(cli, ["reduce", "parametrize", str(report), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["strength"] == 2
    (entry,) = data["explosions"]
    assert entry["values_source"] == "plugin"
    assert entry["proposal"]["size"] == 6  # 3x2 pairs dominate: 3*2 = 6 rows
    assert entry["proposal"]["saved_s"] == pytest.approx(24.0 - 12.0)


def test_parametrize_reports_unknown_values(tmp_path):
    tests = [
        {
            "nodeid": f"t.py::test_q[{i}]",
            "function": "test_q",
            "params": i,
            "outcome": "passed",
            "duration_s": 1.0,
        }
        for i in ("a-x", "b-y", "c-z")
    ]
    report = _laptime_json(tmp_path / "r.json", tests)
    result = CliRunner().invoke(cli, ["reduce", "parametrize", str(report)])
    assert result.exit_code == 0, result.output
    assert "values: unknown" in result.output
    assert "no proposal: values unknown" in result.output


def _run_tests(outcome_b):
    return [
        {
            "nodeid": "t/test_m.py::test_a",
            "file": "t/test_m.py",
            "function": "test_a",
            "outcome": "passed",
            "duration_s": 3.0,
        },
        {
            "nodeid": "t/test_m.py::test_b",
            "file": "t/test_m.py",
            "function": "test_b",
            "outcome": outcome_b,
            "duration_s": 1.0,
        },
    ]


def test_matrix_labels_from_at_syntax(tmp_path):
    a = _laptime_json(tmp_path / "a.json", _run_tests("passed"))
    b = _laptime_json(tmp_path / "b.json", _run_tests("failed"))
    result = CliRunner().invoke(
        cli, ["reduce", "matrix", f"{a}@cuda=11.8", f"{b}@cuda=12.1", "--json"]
    )
    assert result.exit_code == 0, result.output
    (verdict,) = json.loads(result.output)["verdicts"]
    assert verdict["dimension"] == "cuda"
    assert verdict["verdict"] == "keep"
    assert verdict["evidence"][0]["test"] == "t/test_m.py::test_b"
    assert verdict["evidence"][0]["failed_on"] == ["12.1"]


def test_matrix_labels_from_session_and_name(tmp_path):
    a = _laptime_json(tmp_path / "job-linux.json", _run_tests("passed"), python="3.10")
    b = _laptime_json(tmp_path / "job-linux-b.json", _run_tests("passed"), python="3.11")
    result = CliRunner().invoke(
        cli,
        ["reduce", "matrix", str(a), str(b), "--label-from-name", r"job-(?P<os>[a-z]+)"],
    )
    assert result.exit_code == 0, result.output
    assert "[reduce] t/test_m.py x python (3.10, 3.11)" in result.output
    # Equal counts: keep the newer 3.11 and drop 3.10's 3.0 + 1.0 s.
    assert "python=3.11 only for pull requests" in result.output
    assert "saves 4 s of machine time in the window, 4 s/day" in result.output


def test_matrix_without_labels_says_how_to_add_them(tmp_path):
    a = _laptime_json(tmp_path / "a.json", _run_tests("passed"))
    result = CliRunner().invoke(cli, ["reduce", "matrix", str(a)])
    assert result.exit_code == 0
    assert "FILE@k=v" in result.output


def test_matrix_errors_are_one_line(tmp_path):
    a = _laptime_json(tmp_path / "a.json", _run_tests("passed"))
    runner = CliRunner()
    result = runner.invoke(cli, ["reduce", "matrix", f"{a}@cuda"])
    assert result.exit_code == 1
    assert "labels after '@' must look like k=v" in result.output
    result = runner.invoke(cli, ["reduce", "matrix", str(a), "--label-from-name", "("])
    assert result.exit_code == 1
    assert "invalid regex" in result.output
    result = runner.invoke(cli, ["reduce", "matrix", str(tmp_path / "missing.json")])
    assert result.exit_code == 1
    assert "Traceback" not in result.output


def test_parse_file_spec(tmp_path):
    spec = parse_file_spec("r.xml@python=3.11, cuda=12.1")
    assert spec.path == "r.xml"
    assert spec.labels == {"python": "3.11", "cuda": "12.1"}
    odd = tmp_path / "odd@name.json"
    odd.write_text("{}")
    assert parse_file_spec(str(odd)).path == str(odd)
    with pytest.raises(click.ClickException):
        parse_file_spec("r.xml@=3")
