"""`--json` output: answer models as the API writes them (unknowns left out), indented."""

from __future__ import annotations

import json
from collections.abc import Sequence

import click
from pydantic import BaseModel


def echo_json(
    answer: BaseModel | Sequence[BaseModel], exclude: frozenset[str] = frozenset()
) -> None:
    """Print an answer model (or a list of them) the way scripts parse it: `exclude` names the
    fields the command has no value for (the server's part of an answer)."""

    def plain(model: BaseModel) -> object:
        return model.model_dump(mode="json", exclude_unset=True, exclude=set(exclude) or None)

    value = plain(answer) if isinstance(answer, BaseModel) else [plain(a) for a in answer]
    click.echo(json.dumps(value, indent=2))
