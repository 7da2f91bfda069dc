"""Sizing says which memory figure it used, and a container-wide job peak (a cgroup's 4,461
MiB where no test exceeded 65 MiB) never outweighs the test processes' own peaks."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from analysis.sizing.catalogue import shipped_catalogues
from analysis.sizing.machine_fit import fit_machines
from app.cli.main import cli
from app.schemas import sizing as answers
from tests.sizing.factories import results_for, run_row, runs_frame


def test_per_test_peaks_size_the_job_and_the_job_peak_is_named_as_unused() -> None:
    results = results_for(
        1, {"a.py::t1": 30.0, "a.py::t2": 30.0}, {"a.py::t1": 40.0, "a.py::t2": 65.0}
    )
    runs = runs_frame([run_row(1, machine="large", wall_s=100.0, peak_rss_mib=4461.0)])
    (job,) = fit_machines(runs, results, shipped_catalogues()["circleci"], headroom=1.25).jobs
    assert job.memory_source == "per-test"
    assert job.need_mib == 65.0 * 1.25
    assert job.memory_basis.startswith("largest per-test peak RSS of the test processes, 65 MiB")
    assert "job's peak of 4461 MiB is not used" in job.memory_basis
    assert answers.MachineFit.of(job).memory_basis == job.memory_basis
    assert answers.MachineFit.of(job).job_peak_rss_mib == 4461.0


def test_without_per_test_peaks_the_job_peak_is_used_and_said() -> None:
    results = results_for(1, {"a.py::t1": 30.0})
    runs = runs_frame([run_row(1, machine="large", wall_s=100.0, peak_rss_mib=700.0)])
    (job,) = fit_machines(runs, results, shipped_catalogues()["circleci"]).jobs
    assert job.memory_source == "job"
    assert job.memory_basis == "the job's peak RSS as uploaded, 700 MiB (no per-test peaks)"


def test_laptime_size_prints_the_basis(tmp_path: Path) -> None:
    doc = {
        "format": "laptime-json",
        "version": 1,
        "session": {"wall_s": 100.0, "peak_rss_mib": 4461.0, "peak_rss_source": "cgroup"},
        "tests": [
            {"nodeid": "a.py::t", "outcome": "passed", "duration_s": 60.0, "peak_rss_mib": 65.0}
        ],
    }
    report = tmp_path / "unit.json"
    report.write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["size", str(report), "--machine", "circleci:large"])
    assert result.exit_code == 0, result.output
    assert "memory need from: largest per-test peak RSS of the test processes, 65 MiB" in (
        " ".join(result.output.split())
    )
    assert "4461 MiB is not used" in " ".join(result.output.split())
