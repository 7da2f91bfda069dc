"""The compare and changes answer models against the domain objects they are built from: a
field added, removed or renamed on either side fails here instead of drifting by hand."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from analysis.changes.attribution import BisectStep
from analysis.changes.listing import ChangeItem
from analysis.changes.step_series import SeriesRun
from analysis.compare import runs  # its TestMove would look like a test class here
from analysis.compare.cost import CostComparison
from analysis.compare.plan_fit import JobOverrun, PlanFit
from app.schemas import changes, compare
from app.services.changes import ChangesAnswer, ChangeSeries, DefaultBranch, StateSet
from tests.server.test_recommendation_schema_drift import _attributes

# (answer model, domain class, domain attributes the answer leaves out, answer fields that
#  come from elsewhere)
PAIRS: list[tuple[type[BaseModel], type, set[str], set[str]]] = [
    (compare.MeasureModel, runs.Measure, {"delta"}, set()),
    (compare.TestMoveModel, runs.TestMove, set(), set()),
    (compare.CostModel, runs.Measure, set(), {"unit"}),
    (compare.JobOverrunModel, JobOverrun, set(), set()),
    (compare.PlanFitModel, PlanFit, set(), set()),
    (
        compare.Compare,
        runs.Comparison,
        set(),
        # The question, and what pricing and the stored plan add.
        {"pipeline", "base", "cells", "machine_time", "cost", "unpriced_machines", "plan_fit"},
    ),
    # cell_id: the row id the weekly rate is looked up by, not part of the answer.
    (changes.ChangeModel, ChangeItem, {"slower", "cell_id"}, set()),
    (changes.BisectStepModel, BisectStep, set(), set()),
    (changes.ChangeList, ChangesAnswer, set(), set()),
    (changes.ChangeStateSet, StateSet, set(), set()),
    (changes.SeriesRunModel, SeriesRun, set(), set()),
    (changes.ChangeSeriesModel, ChangeSeries, set(), set()),
    (changes.DefaultBranchSet, DefaultBranch, set(), set()),
]


@pytest.mark.parametrize(
    ("model", "cls", "left_out", "derived"),
    PAIRS,
    ids=[f"{m.__name__}-{c.__name__}" for m, c, *_ in PAIRS],
)
def test_answer_models_name_their_domain_fields(
    model: type[BaseModel], cls: type, left_out: set[str], derived: set[str]
) -> None:
    answer = {name for name in model.model_fields if name not in derived}
    assert answer == _attributes(cls) - left_out


def test_pricing_adds_what_the_compare_answer_carries_of_it() -> None:
    priced = {"machine_time", "cost", "unpriced_machines"}
    assert priced <= set(compare.Compare.model_fields)
    assert priced <= _attributes(CostComparison)
