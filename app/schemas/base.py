"""The base of every answer model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ApiModel(BaseModel):
    """Base of every answer model: a field the route writes but the model lacks is an error
    (a 500 in the tests), never a field silently dropped from the answer."""

    model_config = ConfigDict(extra="forbid")
