"""The queue-mode CI templates parse as their CI reads them and run `--laptime-queue` with
the node's I/N from the CI's own variables and a budget."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2] / "integrations"


def test_gitlab_template_reads_the_job_timeout_as_budget() -> None:
    doc = yaml.safe_load((ROOT / "gitlab/laptime-queue.gitlab-ci.yml").read_text())
    job = doc[".laptime-pytest-queue"]
    assert any("CI_JOB_TIMEOUT" in line for line in job["before_script"])
    assert job["before_script"][0].startswith("export LAPTIME_JOB_STARTED_AT")
    assert '--laptime-queue="${CI_NODE_INDEX:-1}/${CI_NODE_TOTAL:-1}"' in job["script"][0]


def test_github_workflow_gives_each_matrix_job_its_node() -> None:
    doc = yaml.safe_load((ROOT / "github/queue-workflow.yml").read_text())
    job = doc["jobs"]["test"]
    nodes = job["strategy"]["matrix"]["node"]
    run = job["steps"][-1]["run"]
    assert f"--laptime-queue=${{{{ matrix.node }}}}/{len(nodes)}" in run
    assert float(job["env"]["LAPTIME_BUDGET_S"]) < job["timeout-minutes"] * 60
    assert "LAPTIME_JOB_STARTED_AT" in job["steps"][0]["run"]


def test_circleci_config_counts_nodes_from_one() -> None:
    doc = yaml.safe_load((ROOT / "circleci/queue-config.yml").read_text())
    job = doc["jobs"]["test"]
    command = job["steps"][-1]["run"]["command"]
    assert '--laptime-queue="$((CIRCLE_NODE_INDEX + 1))/$CIRCLE_NODE_TOTAL"' in command
    assert float(job["environment"]["LAPTIME_BUDGET_S"]) > 0
