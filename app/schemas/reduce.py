"""Answers of the reductions: parametrize covering sets and CI-matrix verdicts, built from the
domain's explosions, proposals and verdicts (each model's `of`)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from analysis.reduce.matrix_reduce import MatrixEvidence
from analysis.reduce.matrix_reduce import MatrixVerdict as DomainVerdict
from analysis.reduce.parametrize import CoveringProposal as DomainProposal
from analysis.reduce.parametrize import CoveringRow as DomainRow
from analysis.reduce.parametrize import Explosion as DomainExplosion
from analysis.reduce.parametrize import Variant as DomainVariant
from app.schemas.base import ApiModel, finite, rounded
from app.services.recommendations import ExplosionAdvice as DomainAdvice
from app.services.recommendations import MatrixAnswer, ParametrizeAnswer

ValuesSource = Literal["plugin", "inferred-from-ids"]


class Variant(ApiModel):
    """One measured parametrize variant."""

    params: str
    values: list[str] | None = Field(description="one per argname; null when unknown")
    median_s: float | None
    results: int

    @classmethod
    def of(cls, v: DomainVariant) -> Variant:
        """The answer form of a variant."""
        values = None if v.values is None else list(v.values)
        return cls(params=v.params, values=values, median_s=finite(v.median_s), results=v.results)


class Explosion(ApiModel):
    """A parametrized test function and what its variants cost per run."""

    test: str
    file: str
    classname: str | None
    function: str
    variants: int
    duration_s: float | None
    file_duration_s: float | None
    share_of_file: float | None
    window_s: float | None
    runs: int
    argnames: list[str]
    values: dict[str, list[str]]
    values_source: ValuesSource | None
    values_note: str | None
    variant_list: list[Variant]

    @classmethod
    def of(cls, e: DomainExplosion) -> Explosion:
        """The answer form of an explosion."""
        return cls(
            test=e.test,
            file=e.file,
            classname=e.classname,
            function=e.function,
            variants=len(e.variants),
            duration_s=finite(e.duration_s),
            file_duration_s=finite(e.file_duration_s),
            share_of_file=finite(e.share_of_file),
            window_s=finite(e.window_s),
            runs=e.runs,
            argnames=list(e.argnames),
            values={a: list(v) for a, v in zip(e.argnames, e.values, strict=True)},
            values_source=e.values_source,
            values_note=e.values_note,
            variant_list=[Variant.of(v) for v in e.variants],
        )


class CoveringRow(ApiModel):
    """One proposed variant."""

    values: list[str]
    params: str | None
    duration_s: float | None
    measured: bool

    @classmethod
    def of(cls, row: DomainRow) -> CoveringRow:
        """The answer form of a proposed variant."""
        return cls(
            values=list(row.values),
            params=row.params,
            duration_s=finite(row.duration_s),
            measured=row.measured,
        )


class CoveringProposal(ApiModel):
    """A covering set for one explosion, the predicted saving and the code to paste."""

    test: str
    strength: int
    argnames: list[str]
    values_source: ValuesSource
    size: int
    variants: int
    lower_bound: int
    proven_minimal: bool
    method: str
    current_s: float | None
    proposed_s: float | None
    saved_s: float | None
    saved_fraction: float | None
    unmeasured_rows: int
    rows: list[CoveringRow]
    code: str

    @classmethod
    def of(cls, p: DomainProposal) -> CoveringProposal:
        """The answer form of a covering proposal."""
        return cls(
            test=p.test,
            strength=p.strength,
            argnames=list(p.argnames),
            values_source=p.values_source,
            size=len(p.rows),
            variants=p.variants,
            lower_bound=p.lower_bound,
            proven_minimal=p.proven_minimal,
            method=p.method,
            current_s=finite(p.current_s),
            proposed_s=finite(p.proposed_s),
            saved_s=finite(p.saved_s),
            saved_fraction=finite(p.saved_fraction),
            unmeasured_rows=sum(1 for r in p.rows if not r.measured),
            rows=[CoveringRow.of(r) for r in p.rows],
            code=p.code,
        )


class ExplosionAdvice(ApiModel):
    """An explosion and its proposal (null, with a note, when none can be made)."""

    explosion: Explosion
    proposal: CoveringProposal | None
    note: str | None = None

    @classmethod
    def of(cls, advice: DomainAdvice) -> ExplosionAdvice:
        """The answer form; the note only when there is no proposal."""
        proposal = None if advice.proposal is None else CoveringProposal.of(advice.proposal)
        note = {} if advice.note is None else {"note": advice.note}
        return cls(explosion=Explosion.of(advice.explosion), proposal=proposal, **note)


class Parametrize(ApiModel):
    """The costliest parametrize explosions and their covering sets."""

    strength: int
    explosions: list[ExplosionAdvice]

    @classmethod
    def of(cls, answer: ParametrizeAnswer) -> Parametrize:
        """The answer form of the explosions and their proposals."""
        return cls(
            strength=answer.strength,
            explosions=[ExplosionAdvice.of(advice) for advice in answer.explosions],
        )


class ExplosionWithProposal(Explosion):
    """`laptime reduce parametrize --json`: an explosion's fields and its proposal."""

    proposal: CoveringProposal | None

    @classmethod
    def pair(cls, e: DomainExplosion, p: DomainProposal | None) -> ExplosionWithProposal:
        """An explosion's answer form with its proposal's."""
        proposal = None if p is None else CoveringProposal.of(p)
        return cls(**dict(Explosion.of(e)), proposal=proposal)


class LocalParametrize(ApiModel):
    """`laptime reduce parametrize --json`: the explosions of local reports."""

    strength: int
    explosions: list[ExplosionWithProposal]


class Evidence(ApiModel):
    """One test that behaved differently across a dimension's values on the same commit:
    passed_on/failed_on for outcome evidence, median_s/ratio for duration evidence."""

    kind: Literal["outcome", "duration"]
    test: str
    context: str = Field(description="the commit (or pipeline) compared on")
    fixed_labels: str = Field(description="the other labels held fixed, k=v,...")
    passed_on: list[str] | None = None
    failed_on: list[str] | None = None
    median_s: dict[str, float] | None = None
    ratio: float | None = Field(default=None, description="slowest / fastest; null: infinite")

    @classmethod
    def of(cls, e: MatrixEvidence) -> Evidence:
        """The answer form of one piece of evidence: only its kind's fields."""
        if e.kind == "outcome":
            return cls(
                kind=e.kind,
                test=e.test,
                context=e.context,
                fixed_labels=e.fixed_labels,
                passed_on=list(e.passed_on),
                failed_on=list(e.failed_on),
            )
        return cls(
            kind=e.kind,
            test=e.test,
            context=e.context,
            fixed_labels=e.fixed_labels,
            median_s={k: round(v, 6) for k, v in e.median_s.items()},
            ratio=None if math.isinf(e.ratio) else round(e.ratio, 4),
        )


class MatrixVerdict(ApiModel):
    """Whether one group needs every value of one label dimension, with the evidence."""

    group_by: Literal["file", "marker"]
    group: str
    dimension: str
    values: list[str]
    verdict: Literal["keep", "reduce", "insufficient-data"]
    recommendation: str
    compared: int
    outcome_differs: int
    duration_differs: int
    threshold: float
    keep_value: str | None
    dropped_s: float
    window_days: int | None
    dropped_s_per_day: float | None
    evidence: list[Evidence]

    @classmethod
    def of(cls, v: DomainVerdict) -> MatrixVerdict:
        """The answer form of a verdict."""
        return cls(
            group_by=v.group_by,
            group=v.group,
            dimension=v.dimension,
            values=list(v.values),
            verdict=v.verdict,
            recommendation=v.recommendation,
            compared=v.compared,
            outcome_differs=v.outcome_differs,
            duration_differs=v.duration_differs,
            threshold=v.threshold,
            keep_value=v.keep_value,
            dropped_s=round(v.dropped_s, 6),
            window_days=v.window_days,
            dropped_s_per_day=rounded(v.dropped_s_per_day, 6),
            evidence=[Evidence.of(e) for e in v.evidence],
        )


class Matrix(ApiModel):
    """A verdict per (group, label dimension)."""

    group_by: Literal["file", "marker"]
    verdicts: list[MatrixVerdict]

    @classmethod
    def of(cls, answer: MatrixAnswer) -> Matrix:
        """The answer form of the verdicts."""
        return cls(
            group_by=answer.group_by, verdicts=[MatrixVerdict.of(v) for v in answer.verdicts]
        )
