"""Answers of machine sizing and the machine catalogues, built from the domain's reports and
catalogue entries (each model's `of`); the domain keeps full precision, these round."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from analysis.sizing.catalogue import Catalogue as DomainCatalogue
from analysis.sizing.catalogue import MachineType
from analysis.sizing.machine_fit import MachineFit as DomainFit
from analysis.sizing.machine_fit import Prediction as DomainPrediction
from analysis.sizing.machine_fit import SizingReport as DomainReport
from app.schemas.base import ApiModel, rounded
from app.services.recommendations import MachinesAnswer


class PeakTest(ApiModel):
    """A test among a job's memory peaks."""

    nodeid: str
    peak_rss_mib: float


class Prediction(ApiModel):
    """One job on one machine type of the catalogue."""

    machine: str
    vcpus: float
    memory_gib: float
    workers: int
    predicted_wall_s: float
    need_mib: float | None
    fits_memory: bool | None = Field(description="null without memory data")
    within_wait: bool
    cost_per_run: float | None

    @classmethod
    def of(cls, p: DomainPrediction) -> Prediction:
        """The answer form of one prediction."""
        return cls(
            machine=p.machine,
            vcpus=p.vcpus,
            memory_gib=p.memory_gib,
            workers=p.workers,
            predicted_wall_s=round(p.wall_s, 3),
            need_mib=rounded(p.need_mib, 1),
            fits_memory=p.fits_memory,
            within_wait=p.within_wait,
            cost_per_run=rounded(p.cost_per_run, 4),
        )


class MachineFit(ApiModel):
    """The sizing answer for one job."""

    job: str
    members: list[str]
    machine: str | None
    machine_known: bool
    workers: int
    parallel: bool
    test_s: float
    overhead_s: float
    longest_test_s: float
    memory_source: Literal["per-test", "job"] | None
    memory_basis: str | None
    peak_rss_mib: float | None
    job_peak_rss_mib: float | None
    need_mib: float | None
    peak_tests: list[PeakTest]
    wall_s: float
    recommended: str | None
    recommended_workers: int | None
    recommended_wall_s: float | None
    cost_per_run: float | None
    recommended_cost_per_run: float | None
    runs_per_day: float | None
    cost_per_month: float | None
    recommended_cost_per_month: float | None
    saving_per_run: float | None
    saving_per_month: float | None
    advice: str
    notes: list[str]
    max_cores_used: float = Field(description="most cores a test used (CPU time / wall)")
    parallel_fraction: float = Field(description="Amdahl parallel fraction fitted")
    predictions: list[Prediction] = Field(description="per machine type of the catalogue")

    @classmethod
    def of(cls, fit: DomainFit) -> MachineFit:
        """The answer form of one job's fit."""
        return cls(
            job=fit.job,
            members=list(fit.members),
            machine=fit.machine,
            machine_known=fit.current is not None,
            workers=fit.workers,
            parallel=fit.parallel,
            test_s=round(fit.test_s, 3),
            overhead_s=round(fit.overhead_s, 3),
            longest_test_s=round(fit.chain_s, 3),
            memory_source=fit.memory_source,
            memory_basis=fit.memory_basis,
            peak_rss_mib=rounded(fit.peak_mib, 1),
            job_peak_rss_mib=rounded(fit.job_peak_mib, 1),
            need_mib=rounded(fit.need_mib, 1),
            peak_tests=[PeakTest(nodeid=n, peak_rss_mib=round(p, 1)) for n, p in fit.peak_tests],
            wall_s=round(fit.wall_s, 3),
            recommended=None if fit.recommended is None else fit.recommended.name,
            recommended_workers=fit.recommended_workers,
            recommended_wall_s=rounded(fit.recommended_wall_s, 3),
            cost_per_run=rounded(fit.cost_per_run, 4),
            recommended_cost_per_run=rounded(fit.recommended_cost_per_run, 4),
            runs_per_day=rounded(fit.runs_per_day, 3),
            cost_per_month=rounded(fit.cost_per_month, 2),
            recommended_cost_per_month=rounded(fit.recommended_cost_per_month, 2),
            saving_per_run=rounded(fit.saving_per_run, 4),
            saving_per_month=rounded(fit.saving_per_month, 2),
            advice=fit.advice,
            notes=list(fit.notes),
            max_cores_used=round(fit.max_cores_used, 3),
            parallel_fraction=round(fit.parallel_fraction, 4),
            predictions=[Prediction.of(p) for p in fit.predictions],
        )


class SizingReport(ApiModel):
    """Every job's fit, the wait before and after, and the monthly totals."""

    catalogue: str
    unit: str = Field(description='"USD" or the catalogue\'s credit name')
    headroom: float
    wait_target_s: float
    wait_s: float
    wait_after_s: float
    cost_per_month: float | None
    cost_per_month_after: float | None
    saving_per_month: float | None
    unknown_machines: list[str]
    warnings: list[str]
    jobs: list[MachineFit]

    @classmethod
    def of(cls, report: DomainReport) -> SizingReport:
        """The answer form of a sizing report."""
        return cls(
            catalogue=report.catalogue,
            unit=report.unit,
            headroom=report.headroom,
            wait_target_s=round(report.wait_target_s, 3),
            wait_s=round(report.wait_s, 3),
            wait_after_s=round(report.wait_after_s, 3),
            cost_per_month=rounded(report.cost_per_month, 2),
            cost_per_month_after=rounded(report.cost_per_month_after, 2),
            saving_per_month=rounded(report.saving_per_month, 2),
            unknown_machines=list(report.unknown_machines),
            warnings=list(report.warnings),
            jobs=[MachineFit.of(job) for job in report.jobs],
        )


class Machines(ApiModel):
    """Sizing today, and after a split when one was asked for (`split_jobs`)."""

    cell: str
    cells: list[str]
    today: SizingReport
    split_verdict: Literal["split", "keep", "not_worth_it", "refused"] | None = Field(
        default=None, description="present when split_jobs was given"
    )
    complete: bool | None = Field(default=None, description="present when split_jobs was given")
    after_split: SizingReport | None = Field(
        default=None, description="present when the split's verdict is split"
    )

    @classmethod
    def of(cls, answer: MachinesAnswer) -> Machines:
        """The answer form; the split's fields only when a split was asked for."""
        split: dict[str, Any] = {}
        if answer.split is not None:
            split = {"split_verdict": answer.split.verdict, "complete": answer.split.complete}
        if answer.after_split is not None:
            split["after_split"] = SizingReport.of(answer.after_split)
        return cls(
            cell=answer.cell,
            cells=list(answer.cells),
            today=SizingReport.of(answer.today),
            **split,
        )


class MachineEntry(ApiModel):
    """One machine type of a catalogue; what is unknown is left out."""

    name: str
    vcpus: float
    memory_gib: float
    os: str
    arch: str
    source: str
    as_of: str
    usd_per_min: float | None = None
    credits_per_min: float | None = None
    executor: str | None = None
    gpu: str | None = None
    specs_source: str | None = None
    aliases: list[str] | None = None

    @classmethod
    def of(cls, machine: MachineType) -> MachineEntry:
        """The answer form of a machine type, its unknowns left out."""
        known: dict[str, Any] = {
            key: getattr(machine, key)
            for key in ("usd_per_min", "credits_per_min", "executor", "gpu", "specs_source")
            if getattr(machine, key) is not None
        }
        if machine.aliases:
            known["aliases"] = list(machine.aliases)
        return cls(
            name=machine.name,
            vcpus=machine.vcpus,
            memory_gib=machine.memory_gib,
            os=machine.os,
            arch=machine.arch,
            source=machine.source,
            as_of=machine.as_of,
            **known,
        )


class CatalogueDoc(ApiModel):
    """A machine catalogue."""

    name: str
    vendor: str
    unit: str
    credit_name: str
    credit_price_usd: float | None
    source: str
    as_of: str | None
    machines: list[MachineEntry]

    @classmethod
    def of(cls, catalogue: DomainCatalogue) -> CatalogueDoc:
        """The answer form of a catalogue."""
        return cls(
            name=catalogue.name,
            vendor=catalogue.vendor,
            unit=catalogue.unit,
            credit_name=catalogue.credit_name,
            credit_price_usd=catalogue.credit_price_usd,
            source=catalogue.source,
            as_of=catalogue.as_of,
            machines=[MachineEntry.of(m) for m in catalogue.machines],
        )


class ProjectCatalogue(ApiModel):
    """The catalogue a project is priced from."""

    name: str | None
    custom_toml: str | None
    catalogue: CatalogueDoc | None
    shipped: list[str]


class CatalogueSet(ApiModel):
    """The catalogue now declared."""

    name: str | None
    custom: bool
