"""What a GitHub Actions snippet's matrix jobs get in their environment, as GitHub sets it."""

from __future__ import annotations

import re
from typing import Any

import yaml

_MATRIX_EXPRESSION = re.compile(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}")


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
