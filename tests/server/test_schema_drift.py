"""The answer schemas are checked against the domain objects they are built from: a field
added, removed or renamed on either side fails here, never drifts by hand (issue 28)."""

from __future__ import annotations

import dataclasses
import typing

import pytest
from pydantic import BaseModel

from analysis.accuracy.plan_accuracy import Comparison, JobAccuracy, PipelineAccuracy, PlanAccuracy
from analysis.accuracy.plan_record import PlanRecord, PredictedJob
from app.schemas import accuracy as schema

# (answer model, domain class, answer field -> domain attribute where the names differ,
#  domain attributes the answer leaves out on purpose)
PAIRS: list[tuple[type[BaseModel], type, dict[str, str], set[str]]] = [
    (schema.Comparison, Comparison, {}, set()),
    (schema.PredictedJob, PredictedJob, {}, set()),
    (
        schema.JobAccuracy,
        JobAccuracy,
        {"wall_s": "wall", "tests_s": "tests", "setup_s": "setup"},
        set(),
    ),
    (
        schema.PipelineAccuracy,
        PipelineAccuracy,
        {"wait_s": "wait", "machine_s": "machine"},
        set(),
    ),
]


def _attributes(cls: type) -> set[str]:
    """A dataclass's fields and public properties."""
    fields = {f.name for f in dataclasses.fields(cls)}
    properties = {n for n, v in vars(cls).items() if isinstance(v, property)}
    return fields | properties


@pytest.mark.parametrize(("model", "cls", "renamed", "left_out"), PAIRS)
def test_answer_model_and_domain_object_name_the_same_fields(
    model: type[BaseModel], cls: type, renamed: dict[str, str], left_out: set[str]
) -> None:
    answer = {renamed.get(name, name) for name in model.model_fields}
    assert answer == _attributes(cls) - left_out


def test_plan_answer_covers_the_plan_record() -> None:
    answer = set(schema.PlanAccuracyModel.model_fields)
    renamed = {"plan_id": "id", "jobs": "jobs", "predicted_wait_s": "wait_s"}
    renamed |= {"predicted_machine_s": "machine_s", "predicted_cost": "cost"}
    plan = {renamed.get(n, n) for n in answer} - {"pipelines"}
    assert plan == _attributes(PlanRecord)
    assert {f.name for f in dataclasses.fields(PlanAccuracy)} == {"plan", "pipelines"}


def test_predicted_job_types_agree() -> None:
    """Same field, same type (a tuple in the domain is a list in JSON)."""
    hints = typing.get_type_hints(PredictedJob)
    for name, info in schema.PredictedJob.model_fields.items():
        want = str(hints[name]).replace("tuple[str, ...]", "list[str]")
        want = want.replace("collections.abc.Mapping", "dict").replace("typing.Mapping", "dict")
        assert str(info.annotation).replace("typing.", "") == want.replace("typing.", ""), name
