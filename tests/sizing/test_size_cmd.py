"""`laptime size` through click's CliRunner on laptime JSON reports written on the fly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli.main import cli


def write_report(path: Path, *, peaks: bool = True, workers: int | None = None) -> Path:
    # Serial job: 60 s of tests, wall 100 s; peaks 1000/3000/2000 MiB (need 3750 MiB).
    tests = [
        {"nodeid": "a.py::t1", "outcome": "passed", "duration_s": 10.0, "peak_rss_mib": 1000.0},
        {"nodeid": "a.py::t2", "outcome": "passed", "duration_s": 20.0, "peak_rss_mib": 3000.0},
        {"nodeid": "b.py::t", "outcome": "passed", "duration_s": 30.0, "peak_rss_mib": 2000.0},
    ]
    if not peaks:
        for test in tests:
            del test["peak_rss_mib"]
    session = {"wall_s": 100.0, "started_at": "2026-11-01T00:00:00+00:00"}
    if workers:
        session["xdist_workers"] = workers
    doc = {"format": "laptime-json", "version": 1, "session": session, "tests": tests}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["size", *args], env=env)


def test_json_output(tmp_path: Path) -> None:
    report = write_report(tmp_path / "unit.json")
    result = run(str(report), "--catalogue", "circleci", "--machine", "2xlarge", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (job,) = data["jobs"]
    assert job["machine"] == "2xlarge"
    assert job["need_mib"] == 3750.0
    assert job["recommended"] == "medium"
    assert job["peak_tests"][0] == {"nodeid": "a.py::t2", "peak_rss_mib": 3000.0}
    # 80 credits x $0.0006 x 100/60 min.
    assert job["cost_per_run"] == pytest.approx(0.08)


def test_table_output_names_the_peak_and_the_advice(tmp_path: Path) -> None:
    report = write_report(tmp_path / "unit.json")
    result = run(str(report), "--catalogue", "circleci", "--machine", "circleci:2xlarge")
    assert result.exit_code == 0, result.output
    assert "downsize to medium" in result.output
    assert "peak 3000 MiB: a.py::t2" in result.output
    assert "extra cores are waste" in result.output


def test_headroom_and_workers_options(tmp_path: Path) -> None:
    report = write_report(tmp_path / "unit.json")
    result = run(
        str(report),
        "--catalogue",
        "circleci",
        "--machine",
        "large",
        "--workers",
        "4",
        "--headroom",
        "1.5",
        "--json",
    )
    assert result.exit_code == 0, result.output
    job = json.loads(result.output)["jobs"][0]
    # 3000 MiB x 4 workers (auto on 4 vCPUs) x 1.5 = 18,000 MiB.
    assert job["need_mib"] == 18000.0
    assert job["workers"] == 4


def test_no_memory_data_says_what_to_collect(tmp_path: Path) -> None:
    report = write_report(tmp_path / "unit.json", peaks=False)
    result = run(str(report), "--catalogue", "circleci", "--machine", "large")
    assert result.exit_code == 0, result.output
    assert "--laptime-report" in result.output


def test_unknown_machine_is_listed(tmp_path: Path) -> None:
    report = write_report(tmp_path / "unit.json")
    result = run(str(report), "--catalogue", "circleci", "--machine", "mystery")
    assert result.exit_code == 0, result.output
    assert "unknown machine types (not priced): mystery" in result.output


def test_catalogue_is_implied_by_the_machine(tmp_path: Path) -> None:
    report = write_report(tmp_path / "unit.json")
    result = run(str(report), "--machine", "ubuntu-latest", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["catalogue"] == "github"


def test_user_catalogue_file_and_env(tmp_path: Path) -> None:
    report = write_report(tmp_path / "unit.json")
    cat = tmp_path / "mine.yaml"
    cat.write_text(
        "catalogue: {name: circleci}\n"
        "machine:\n"
        "  - {name: medium, os: linux, arch: x64, vcpus: 2, memory_gib: 4, usd_per_min: 0.5,\n"
        "     source: 'https://example.com', as_of: 2026-12-01}\n",
        encoding="utf-8",
    )
    result = run(str(report), "--machine", "medium", "--json", env={"LAPTIME_CATALOGUES": str(cat)})
    assert result.exit_code == 0, result.output
    job = json.loads(result.output)["jobs"][0]
    # medium now costs $0.5/min in this override: small is too small, medium+ wins.
    assert job["recommended"] == "medium+"
    assert job["cost_per_run"] == pytest.approx(0.5 * 100 / 60, abs=1e-4)  # rounded to 4 places


def test_bad_catalogue_is_one_line_error(tmp_path: Path) -> None:
    report = write_report(tmp_path / "unit.json")
    bad = tmp_path / "bad.toml"
    bad.write_text('[catalogue]\nname = "x"\n[[machine]]\nname = "m"\n', encoding="utf-8")
    result = run(str(report), "--catalogue", str(bad))
    assert result.exit_code == 1
    assert "bad.toml: machine[0] 'm': missing `os`" in result.output
    assert "Traceback" not in result.output


def test_unknown_catalogue_name(tmp_path: Path) -> None:
    report = write_report(tmp_path / "unit.json")
    result = run(str(report), "--catalogue", "travis")
    assert result.exit_code == 1
    assert "no catalogue 'travis'; available: circleci, github, gitlab" in result.output


def test_history_sizes_several_runs_of_one_job_as_one_job(tmp_path: Path) -> None:
    first = write_report(tmp_path / "a.json")
    second = write_report(tmp_path / "b.json")
    args = ("--catalogue", "circleci", "--machine", "2xlarge", "--json")
    apart = json.loads(run(str(first), str(second), *args).output)
    # Without --history each report is its own job (the complaint)...
    assert [job["job"] for job in apart["jobs"]] == ["a", "b"]
    result = run("--history", str(first), str(second), *args)
    assert result.exit_code == 0, result.output
    (job,) = json.loads(result.output)["jobs"]
    # ...with it, the two runs are one job: medians of its tests, the same need.
    assert job["job"] == "tests"
    assert job["test_s"] == 60.0
    assert job["need_mib"] == 3750.0
