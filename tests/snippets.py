"""CI snippets run as their CI would run them: per job, the environment the CI sets and the
shell steps in order (GitHub Actions, GitLab CI, CircleCI, a plain shell script)."""

from __future__ import annotations

import re
import string
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import lxml.html  # type: ignore[import-untyped]
import yaml

from tests.conftest import LiveServer

_MATRIX_EXPRESSION = re.compile(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}")
_EXPRESSION = re.compile(r"\$\{\{\s*(matrix|vars|secrets)\.([\w-]+)\s*\}\}")


def github_matrix_envs(snippet: str) -> list[dict[str, str]]:
    """Per matrix job, in order: the job's `env:` with `${{ matrix.key }}` substituted from
    its entry (`include` entries, or a `group` list)."""
    job = yaml.safe_load(snippet)["jobs"]["test"]
    matrix = job["strategy"]["matrix"]
    entries: list[dict[str, Any]] = matrix.get("include") or [{"group": g} for g in matrix["group"]]
    env: dict[str, str] = job.get("env", {})
    return [{key: _expand(value, entry) for key, value in env.items()} for entry in entries]


def _expand(text: str, entry: dict[str, Any]) -> str:
    return _MATRIX_EXPRESSION.sub(lambda m: str(entry[m[1]]), text)


@dataclass
class CiJob:
    """One job of a CI snippet: its environment and its shell steps, in order."""

    env: dict[str, str]
    scripts: list[str] = field(default_factory=list)
    # Where the CI carries variables between steps ("" for none): GitHub's GITHUB_ENV (KEY=V
    # lines) or CircleCI's BASH_ENV (sourced by every later bash).
    carry: str = ""


def github_jobs(snippet: str, settings: Mapping[str, str]) -> list[CiJob]:
    """Per matrix entry: `env:` and `run:` steps with `${{ matrix|vars|secrets.X }}` resolved
    as GitHub does (an unset variable or secret is ""); `uses:` steps are GitHub's own."""
    job = yaml.safe_load(snippet)["jobs"]["test"]
    jobs = []
    for entry in job["strategy"]["matrix"]["include"]:

        def resolve(text: str, entry: dict[str, Any] = entry) -> str:
            def value(m: re.Match[str]) -> str:
                return str(entry[m[2]]) if m[1] == "matrix" else settings.get(m[2], "")

            assert "${{" not in _EXPRESSION.sub("", text), f"unknown expression in {text!r}"
            return _EXPRESSION.sub(value, text)

        env = {k: resolve(str(v)) for k, v in job.get("env", {}).items()}
        scripts = [resolve(step["run"]) for step in job["steps"] if "run" in step]
        jobs.append(CiJob(env, scripts, carry="GITHUB_ENV"))
    return jobs


def gitlab_jobs(snippet: str, settings: Mapping[str, str]) -> list[CiJob]:
    """`parallel: N` jobs: CI_NODE_INDEX 1..N, job variables expanded with the predefined
    ones, before_script and script in one shell (as GitLab's runner does)."""
    job = yaml.safe_load(snippet)["test"]
    total = int(job["parallel"])
    jobs = []
    for index in range(1, total + 1):
        node = {"GITLAB_CI": "true", "CI_NODE_INDEX": str(index), "CI_NODE_TOTAL": str(total)}
        variables = {
            k: string.Template(str(v)).safe_substitute(node)
            for k, v in job.get("variables", {}).items()
        }
        script = "\n".join(job.get("before_script", []) + job["script"])
        jobs.append(CiJob({**settings, **node, **variables}, [script]))
    return jobs


def circleci_jobs(snippet: str, settings: Mapping[str, str]) -> list[CiJob]:
    """`parallelism: N` nodes: CIRCLE_NODE_INDEX 0..N-1, each `run` step a bash that sources
    BASH_ENV (checkout is CircleCI's own)."""
    job = yaml.safe_load(snippet)["jobs"]["test"]
    total = int(job["parallelism"])
    scripts = []
    for step in job["steps"]:
        if isinstance(step, dict) and "run" in step:
            run = step["run"]
            scripts.append(run if isinstance(run, str) else run["command"])
    return [
        CiJob(
            {
                **settings,
                "CIRCLECI": "true",
                "CIRCLE_NODE_INDEX": str(i),
                "CIRCLE_NODE_TOTAL": str(total),
            },
            list(scripts),
            carry="BASH_ENV",
        )
        for i in range(total)
    ]


def shell_jobs(snippet: str, total: int, settings: Mapping[str, str]) -> list[CiJob]:
    """The plain script, once per job with LAPTIME_SHARD=I/N."""
    return [
        CiJob({**settings, "LAPTIME_SHARD": f"{i}/{total}"}, [snippet]) for i in range(1, total + 1)
    ]


def run_ci_job(job: CiJob, *, cwd: Path, env: Mapping[str, str], timeout: float = 300) -> str:
    """Run the job's steps in order as its CI would (bash -eo pipefail, stop at the first
    failure); returns the output; raises AssertionError naming a failing step."""
    status, output, _steps = ci_job_status(job, cwd=cwd, env=env, timeout=timeout)
    assert status == 0, output
    return output


def ci_job_status(
    job: CiJob, *, cwd: Path, env: Mapping[str, str], timeout: float = 300
) -> tuple[int, str, int]:
    """Run the job's steps as run_ci_job does: (the job's exit status, its output, how many
    steps ran), for a job expected to fail."""
    carry = cwd.parent / f".{cwd.name}.carry"
    carry.write_text("")
    extra: dict[str, str] = {}
    output = []
    for script in job.scripts:
        step_env = {**env, **job.env, **extra}
        if job.carry:
            step_env[job.carry] = str(carry)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=cwd,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        output.append(f"$ {script}\n{done.stdout}{done.stderr}")
        if done.returncode != 0:
            return done.returncode, "\n".join(output), len(output)
        if job.carry == "GITHUB_ENV":
            for line in carry.read_text().splitlines():
                key, _, value = line.partition("=")
                extra[key] = value
    return 0, "\n".join(output), len(output)


def page_snippets(
    server: LiveServer, slug: str, ask: dict[str, str], *, track: bool = False
) -> dict[str, str]:
    """Every code block of the page's "Config changes to copy", by its heading; with `track`,
    of the page its "Track this plan" form answers (posted as a browser does)."""
    with httpx.Client(base_url=server.url, timeout=120) as browser:
        page = browser.get(f"/p/{slug}/recommendations", params=ask)
        assert page.status_code == 200, page.text
        doc = lxml.html.fromstring(page.text)
        if track:
            [form] = doc.cssselect("form.track-plan")
            fields = {i.get("name"): i.get("value") for i in form.cssselect("input[type=hidden]")}
            page = browser.post(str(form.get("action")), data=fields)
            assert page.status_code == 200, page.text
            doc = lxml.html.fromstring(page.text)
    [section] = doc.xpath("//section[h2[contains(., 'Config changes to copy')]]")
    blocks = {}
    for pre in section.cssselect("pre.code"):
        [heading] = pre.xpath("preceding-sibling::h3[1]")
        blocks[heading.text_content().strip()] = pre.text_content()
    return blocks


def accuracy_pipeline(
    server: LiveServer, slug: str, token: str, run_id: str, jobs: int
) -> dict[str, Any]:
    """The accuracy answer's pipeline of CI run `run_id` once all its jobs are matched (60 s
    at most: the uploads are processed by the server's worker)."""
    deadline = time.monotonic() + 60
    while True:
        answer = httpx.get(
            f"{server.url}/api/v1/projects/{slug}/recommendations/accuracy",
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        pipelines = [
            p
            for plan in answer.json()["plans"]
            for p in plan["pipelines"]
            if p["pipeline"].startswith(run_id)
        ]
        matched = [p for p in pipelines if sum(j["run_id"] is not None for j in p["jobs"]) == jobs]
        if matched or time.monotonic() > deadline:
            assert matched, answer.json()
            return matched[0]
        time.sleep(0.5)
