"""The recommendation answer models against the domain objects (and the services' typed
answers) they are built from: a field added, removed or renamed on either side fails here
instead of drifting by hand."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

from analysis.ci.runner_commands import JobSelection
from analysis.reduce import matrix_reduce, parametrize
from analysis.sizing import catalogue, machine_fit
from analysis.split import job_model, result, shards
from app.schemas import reduce, sizing, split
from app.services import recommendations as service

# (answer model, domain class, answer field -> domain attribute where the names differ,
#  domain attributes the answer leaves out, answer fields derived from others / the server's)
PAIRS: list[tuple[type[BaseModel], type, dict[str, str], set[str], set[str]]] = [
    (split.LayoutTotals, result.LayoutTotals, {}, set(), set()),
    (split.JobParts, job_model.JobParts, {}, {"fixed_s"}, set()),
    (
        split.PlannedJob,
        result.PlannedJob,
        {"predicted_test_s": "test_s", "predicted_wall_s": "wall_s"},
        set(),
        set(),
    ),
    (split.ParetoRow, result.ParetoRow, {}, set(), set()),
    (split.EstimateSources, result.EstimateSources, {}, set(), set()),
    (
        split.SplitPlan,
        result.SplitPlan,
        {"estimates": "estimate_sources"},
        {"estimates"},
        set(split.SERVER_FIELDS),
    ),
    (
        split.SplitPlan,
        service.SplitAnswer,
        {"expected_error": "calibration"},
        # host: the history's host speed, folded into expected_error with the calibration.
        {"plan", "complete", "host"},
        {f for f in split.SplitPlan.model_fields if f not in split.SERVER_FIELDS | {"config"}},
    ),
    (split.Shard, shards.Shard, {}, {"selection"}, {"runner", "args", "command"}),
    (split.Shards, service.ShardsAnswer, {}, set(), set()),
    (sizing.Prediction, machine_fit.Prediction, {"predicted_wall_s": "wall_s"}, set(), set()),
    (
        sizing.MachineFit,
        machine_fit.MachineFit,
        {
            "machine_known": "current",
            "longest_test_s": "chain_s",
            "peak_rss_mib": "peak_mib",
            "job_peak_rss_mib": "job_peak_mib",
        },
        set(),
        set(),
    ),
    (sizing.SizingReport, machine_fit.SizingReport, {}, set(), set()),
    (
        sizing.Machines,
        service.MachinesAnswer,
        {"split_verdict": "split"},
        set(),
        set(),
    ),
    (sizing.MachineEntry, catalogue.MachineType, {}, {"memory_mib"}, set()),
    (sizing.CatalogueDoc, catalogue.Catalogue, {}, {"prefixes", "_index"}, set()),
    (reduce.Variant, parametrize.Variant, {}, set(), set()),
    (reduce.Explosion, parametrize.Explosion, {"variant_list": "variants"}, set(), set()),
    (reduce.CoveringRow, parametrize.CoveringRow, {}, set(), set()),
    (
        reduce.CoveringProposal,
        parametrize.CoveringProposal,
        {},
        set(),
        {"size", "unmeasured_rows"},
    ),
    (reduce.ExplosionAdvice, service.ExplosionAdvice, {}, set(), set()),
    (reduce.Parametrize, service.ParametrizeAnswer, {}, set(), set()),
    (reduce.Evidence, matrix_reduce.MatrixEvidence, {}, set(), set()),
    (reduce.MatrixVerdict, matrix_reduce.MatrixVerdict, {}, set(), set()),
    (reduce.Matrix, service.MatrixAnswer, {}, set(), set()),
]


def _attributes(cls: type) -> set[str]:
    """A dataclass's fields and public properties."""
    fields = {f.name for f in dataclasses.fields(cls)}
    properties = {n for n, v in vars(cls).items() if isinstance(v, property)}
    return fields | properties


@pytest.mark.parametrize(
    ("model", "cls", "renamed", "left_out", "derived"),
    PAIRS,
    ids=[f"{m.__name__}-{c.__name__}" for m, c, *_ in PAIRS],
)
def test_answer_model_and_domain_object_name_the_same_fields(
    model: type[BaseModel],
    cls: type,
    renamed: dict[str, str],
    left_out: set[str],
    derived: set[str],
) -> None:
    answer = {renamed.get(name, name) for name in model.model_fields if name not in derived}
    assert answer == _attributes(cls) - left_out


def test_a_shards_runner_words_are_the_selection_fields() -> None:
    words = {"runner", "args", "command"}
    assert {f.name for f in dataclasses.fields(JobSelection)} == words
    assert words <= set(split.Shard.model_fields)


def test_the_cli_parametrize_answer_is_an_explosion_and_its_proposal() -> None:
    fields = set(reduce.ExplosionWithProposal.model_fields)
    assert fields == set(reduce.Explosion.model_fields) | {"proposal"}
    assert reduce.ExplosionWithProposal.model_fields["proposal"].annotation == (
        reduce.CoveringProposal | None
    )
