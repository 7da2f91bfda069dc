"""The base of every answer model."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict


class ApiModel(BaseModel):
    """Base of every answer model: a field the route writes but the model lacks is an error
    (a 500 in the tests), never a field silently dropped from the answer."""

    model_config = ConfigDict(extra="forbid")


def rounded(value: float | None, digits: int) -> float | None:
    """A domain figure as the answers write it: rounded, None kept."""
    return None if value is None else round(value, digits)


def finite(value: float, digits: int = 6) -> float | None:
    """A figure that may be NaN (unknown) as the answers write it: rounded, NaN as null."""
    return None if math.isnan(value) else round(value, digits)
