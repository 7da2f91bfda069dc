"""The fork two-step workflows: the untrusted job holds no secret and posts nothing; the
trusted workflow_run job never checks out the fork's code and posts with `comment --file`."""

from __future__ import annotations

import yaml

from tests.client.conftest import ROOT

GITHUB = ROOT / "integrations" / "github"


def test_fork_workflows_keep_secrets_away_from_fork_code() -> None:
    untrusted = (GITHUB / "compare-fork-pr.yml").read_text()
    assert "secrets." not in untrusted
    assert "laptime-ci" in untrusted
    trusted = yaml.safe_load((GITHUB / "compare-fork-comment.yml").read_text())
    # PyYAML reads the `on:` key as True.
    assert trusted[True]["workflow_run"]["workflows"] == ["tests"]
    steps = trusted["jobs"]["comment"]["steps"]
    assert not any("checkout" in s.get("uses", "") for s in steps)
    runs = [s.get("run", "") for s in steps]
    assert any("laptime-ci compare" in r and "--markdown-out compare.md" in r for r in runs)
    assert any("laptime-ci comment --file compare.md" in r for r in runs)
