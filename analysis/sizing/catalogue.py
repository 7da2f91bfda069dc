"""Machine catalogues: what each CI machine type offers and costs, and matching names to it.

A catalogue is plain data (TOML shipped in `analysis/sizing/catalogues/`, or a user's TOML/YAML file
parsed by the caller into a dict). Every entry carries its vCPUs, memory, OS/arch, a price
per minute either in dollars or in the vendor's credits (with one credit price for the
catalogue), and the source URL and as-of date of those figures. Prices are never invented:
an entry without a price cannot be loaded, and a machine name that matches no entry is
reported as unknown by the callers instead of being priced at zero.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from analysis.errors import AnswerError

SHIPPED: tuple[str, ...] = ("circleci", "github", "gitlab")
OSES: tuple[str, ...] = ("linux", "windows", "macos")
ARCHES: tuple[str, ...] = ("x64", "arm64")
# Keys a CI config or upload may put in front of the type name ("resource_class: large").
_KEY_PREFIXES = (
    "resource_class",
    "resource-class",
    "resourceclass",
    "runs-on",
    "runs_on",
    "machine_type",
    "machine-type",
    "tags",
    "tag",
)
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_MACHINE_KEYS = frozenset(
    {
        "name",
        "executor",
        "os",
        "arch",
        "vcpus",
        "memory_gib",
        "usd_per_min",
        "credits_per_min",
        "gpu",
        "aliases",
        "source",
        "specs_source",
        "as_of",
        "note",
    }
)
_CATALOGUE_KEYS = frozenset(
    {
        "name",
        "vendor",
        "prefixes",
        "credit_name",
        "credit_price_usd",
        "credit_price_source",
        "as_of",
        "note",
    }
)


class CatalogueError(AnswerError):
    """A catalogue file is malformed; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class MachineType:
    """One machine type a CI vendor offers."""

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
    aliases: tuple[str, ...] = ()
    specs_source: str | None = None

    @property
    def memory_mib(self) -> float:
        """Memory in MiB (vendors' GB are read as GiB)."""
        return self.memory_gib * 1024.0


@dataclass(frozen=True)
class Catalogue:
    """A named set of machine types with one pricing unit."""

    name: str
    machines: tuple[MachineType, ...]
    vendor: str = ""
    prefixes: tuple[str, ...] = ()
    credit_name: str = "credits"
    credit_price_usd: float | None = None
    source: str = ""  # where this catalogue came from (file path, "shipped", project)
    as_of: str | None = None
    _index: dict[str, MachineType] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        index: dict[str, MachineType] = {}
        for machine in self.machines:
            for key in (machine.name, *machine.aliases):
                index.setdefault(normalise_machine(key, ()), machine)
        object.__setattr__(self, "_index", index)

    @property
    def unit(self) -> str:
        """What costs are expressed in: "USD", or the vendor's credit name when unpriced."""
        if any(m.usd_per_min is not None for m in self.machines):
            return "USD"
        return "USD" if self.credit_price_usd is not None else self.credit_name

    def rate_per_min(self, machine: MachineType) -> float | None:
        """Cost of one minute on `machine` in this catalogue's unit (None when unknown)."""
        usd = machine_usd_per_min(self, machine)
        if self.unit == "USD":
            return usd
        return machine.credits_per_min

    def match(self, text: str | None) -> MachineType | None:
        """The entry an upload's machine type names, or None when it names none."""
        if text is None:
            return None
        return self._index.get(normalise_machine(text, self.prefixes))

    def get(self, name: str) -> MachineType:
        """The entry called `name` (exact, after normalising); KeyError otherwise."""
        machine = self.match(name)
        if machine is None:
            raise KeyError(f"catalogue {self.name!r} has no machine type {name!r}")
        return machine


def normalise_machine(text: str, prefixes: Iterable[str]) -> str:
    """Canonical form of a machine type name: case, spaces, `key:` and vendor prefixes dropped.

    `Resource_Class: Large`, `circleci:large` and ` large ` all become `large`;
    `machine: large` becomes `machine.large`.
    """
    value = re.sub(r"\s*([:=])\s*", r"\1", text.strip().lower())
    value = re.sub(r"\s+", "", value)
    for _ in range(3):  # `circleci:resource_class:large` peels in two steps
        head, sep, rest = value.partition(":")
        if not sep:
            head, sep, rest = value.partition("=")
        if sep and (head in _KEY_PREFIXES or head in {p.lower() for p in prefixes}):
            value = rest
            continue
        break
    return value.replace(":", ".").replace("=", ".")


def machine_usd_per_min(catalogue: Catalogue, machine: MachineType) -> float | None:
    """Dollars per minute on `machine`: its own price, or its credits times the credit price."""
    if machine.usd_per_min is not None:
        return machine.usd_per_min
    if machine.credits_per_min is not None and catalogue.credit_price_usd is not None:
        return machine.credits_per_min * catalogue.credit_price_usd
    return None


def price_per_min(catalogue: Catalogue, machine: str | MachineType | None) -> float | None:
    """Dollars per minute for a machine type name or entry; None when unknown or unpriced."""
    if machine is None:
        return None
    entry = machine if isinstance(machine, MachineType) else catalogue.match(machine)
    return None if entry is None else machine_usd_per_min(catalogue, entry)


def machine_prices(catalogue: Catalogue, machines: Iterable[str | None]) -> dict[str, float]:
    """Dollars per minute keyed by the raw machine strings given (unmatched ones left out).

    This is the mapping `analysis.split.plan.plan_splits(price_per_min=...)` takes.
    """
    out: dict[str, float] = {}
    for raw in machines:
        # A frame's unknown machine arrives as NaN, not None.
        if not isinstance(raw, str) or raw in out:
            continue
        price = price_per_min(catalogue, raw)
        if price is not None:
            out[raw] = price
    return out


# ----------------------------------------------------------------------------------- loading


def load_catalogue_text(text: str, *, source: str) -> Catalogue:
    """Parse and validate a TOML catalogue; CatalogueError with a precise message otherwise."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{source}: not valid TOML: {exc}") from exc
    return load_catalogue_data(data, source=source)


def load_catalogue_data(data: Any, *, source: str) -> Catalogue:
    """Validate an already-parsed catalogue (from TOML or YAML) into a Catalogue."""
    if not isinstance(data, Mapping):
        raise CatalogueError(f"{source}: a catalogue is a table with [catalogue] and [[machine]]")
    unknown = sorted(set(data) - {"catalogue", "machine"})
    if unknown:
        raise CatalogueError(
            f"{source}: unknown top-level key {unknown[0]!r} (expected [catalogue], [[machine]])"
        )
    head = data.get("catalogue")
    if not isinstance(head, Mapping):
        raise CatalogueError(f"{source}: missing the [catalogue] table (with at least `name`)")
    _reject_unknown(head, _CATALOGUE_KEYS, f"{source}: [catalogue]")
    where = f"{source}: [catalogue]"
    name = _text(head, "name", where, required=True) or ""
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name):
        raise CatalogueError(
            f"{where}: name {name!r} must be lower-case letters, digits, '.', '_' or '-'"
        )
    credit_price = _number(head, "credit_price_usd", where, minimum=0.0)
    as_of = _date_text(head, "as_of", where)
    raw_machines = data.get("machine", [])
    if not isinstance(raw_machines, list):
        raise CatalogueError(f"{source}: `machine` must be an array of tables ([[machine]])")
    machines = [
        _machine(raw, f"{source}: machine[{i}]", credit_price) for i, raw in enumerate(raw_machines)
    ]
    catalogue = Catalogue(
        name=name,
        machines=tuple(machines),
        vendor=_text(head, "vendor", where) or "",
        prefixes=tuple(_strings(head, "prefixes", where)),
        credit_name=_text(head, "credit_name", where) or "credits",
        credit_price_usd=credit_price,
        source=source,
        as_of=as_of,
    )
    _check_catalogue(catalogue, source)
    return catalogue


def _machine(raw: Any, where: str, credit_price: float | None) -> MachineType:
    if not isinstance(raw, Mapping):
        raise CatalogueError(f"{where}: each [[machine]] must be a table")
    label = raw.get("name")
    if isinstance(label, str) and label.strip():
        where = f"{where} {label!r}"
    _reject_unknown(raw, _MACHINE_KEYS, where)
    name = _text(raw, "name", where, required=True) or ""
    os_name = _choice(raw, "os", where, OSES)
    arch = _choice(raw, "arch", where, ARCHES)
    vcpus = _number(raw, "vcpus", where, required=True, minimum=0.0, exclusive=True)
    memory = _number(raw, "memory_gib", where, required=True, minimum=0.0, exclusive=True)
    usd = _number(raw, "usd_per_min", where, minimum=0.0)
    credits = _number(raw, "credits_per_min", where, minimum=0.0)
    if usd is None and credits is None:
        raise CatalogueError(
            f"{where}: needs a price: usd_per_min, or credits_per_min "
            "(with credit_price_usd in [catalogue] for dollars)"
        )
    source = _text(raw, "source", where, required=True)
    as_of = _date_text(raw, "as_of", where, required=True)
    if source is None or as_of is None or vcpus is None or memory is None:
        raise AssertionError("required fields are checked above")
    if not re.match(r"https?://\S+$", source):
        raise CatalogueError(
            f"{where}: source must be the URL the figures come from, got {source!r}"
        )
    return MachineType(
        name=name,
        vcpus=vcpus,
        memory_gib=memory,
        os=os_name,
        arch=arch,
        source=source,
        as_of=as_of,
        usd_per_min=usd,
        credits_per_min=credits,
        executor=_text(raw, "executor", where),
        gpu=_text(raw, "gpu", where),
        aliases=tuple(_strings(raw, "aliases", where)),
        specs_source=_text(raw, "specs_source", where),
    )


def _check_catalogue(catalogue: Catalogue, source: str) -> None:
    seen: dict[str, str] = {}
    for machine in catalogue.machines:
        for key in (machine.name, *machine.aliases):
            norm = normalise_machine(key, ())
            if norm in seen and seen[norm] != machine.name:
                raise CatalogueError(
                    f"{source}: {key!r} of machine {machine.name!r} already names "
                    f"machine {seen[norm]!r}; names and aliases must be unique"
                )
            if norm in seen and key == machine.name:
                raise CatalogueError(f"{source}: machine {machine.name!r} is listed twice")
            seen[norm] = machine.name
    # Mixing dollar-priced and credit-only entries would rank incomparable numbers.
    if catalogue.credit_price_usd is None and catalogue.unit == "USD":
        unpriced = [m.name for m in catalogue.machines if m.usd_per_min is None]
        if unpriced:
            raise CatalogueError(
                f"{source}: machine {unpriced[0]!r} has only credits_per_min while others have "
                "usd_per_min; set credit_price_usd in [catalogue] or price every entry in USD"
            )


def merge_catalogues(base: Catalogue, override: Catalogue) -> Catalogue:
    """`base` with `override`'s entries replacing same-named ones and new ones appended."""
    replaced = {m.name: m for m in override.machines}
    machines = [
        _inherit(replaced.pop(m.name), m) if m.name in replaced else m for m in base.machines
    ]
    machines.extend(m for m in override.machines if m.name in replaced)
    merged = replace(
        base,
        machines=tuple(machines),
        vendor=override.vendor or base.vendor,
        prefixes=tuple(dict.fromkeys((*base.prefixes, *override.prefixes))),
        credit_name=override.credit_name if override.credit_name != "credits" else base.credit_name,
        credit_price_usd=override.credit_price_usd
        if override.credit_price_usd is not None
        else base.credit_price_usd,
        source=f"{base.source} + {override.source}",
        as_of=override.as_of or base.as_of,
    )
    _check_catalogue(merged, merged.source)
    return merged


def _inherit(new: MachineType, old: MachineType) -> MachineType:
    """An overriding entry keeps the executor, GPU and aliases it does not restate."""
    return replace(
        new,
        executor=new.executor if new.executor is not None else old.executor,
        gpu=new.gpu if new.gpu is not None else old.gpu,
        aliases=new.aliases or old.aliases,
    )


def shipped_catalogues() -> dict[str, Catalogue]:
    """The catalogues shipped with laptime, by name."""
    package = resources.files("analysis.sizing.catalogues")
    out: dict[str, Catalogue] = {}
    for name in SHIPPED:
        text = package.joinpath(f"{name}.toml").read_text(encoding="utf-8")
        out[name] = load_catalogue_text(text, source=f"shipped:{name}")
    return out


def resolve_catalogues(user: Sequence[Catalogue] = ()) -> dict[str, Catalogue]:
    """Shipped catalogues with user catalogues merged over same-named ones, in order."""
    out = shipped_catalogues()
    for catalogue in user:
        base = out.get(catalogue.name)
        out[catalogue.name] = catalogue if base is None else merge_catalogues(base, catalogue)
    return out


# ------------------------------------------------------------------------------- validation


def _reject_unknown(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise CatalogueError(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )


def _text(table: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise CatalogueError(f"{where}: missing `{key}`")
        return None
    if not isinstance(value, str) or not value.strip():
        raise CatalogueError(f"{where}: `{key}` must be a non-empty string, got {value!r}")
    return value.strip()


def _strings(table: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise CatalogueError(f"{where}: `{key}` must be a list of non-empty strings")
    return [v.strip() for v in value]


def _choice(table: Mapping[str, Any], key: str, where: str, allowed: tuple[str, ...]) -> str:
    value = _text(table, key, where, required=True)
    if value not in allowed:
        raise CatalogueError(f"{where}: `{key}` must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _number(
    table: Mapping[str, Any],
    key: str,
    where: str,
    *,
    required: bool = False,
    minimum: float | None = None,
    exclusive: bool = False,
) -> float | None:
    value = table.get(key)
    if value is None:
        if required:
            raise CatalogueError(f"{where}: missing `{key}`")
        return None
    # bool is an int subclass; `vcpus = true` is a typo, not 1.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CatalogueError(f"{where}: `{key}` must be a number, got {value!r}")
    number = float(value)
    if minimum is not None and (number < minimum or (exclusive and number == minimum)):
        bound = "greater than" if exclusive else "at least"
        raise CatalogueError(f"{where}: `{key}` must be {bound} {minimum:g}, got {value!r}")
    return number


def _date_text(
    table: Mapping[str, Any], key: str, where: str, *, required: bool = False
) -> str | None:
    value = table.get(key)
    # TOML and YAML both turn an unquoted 2026-12-02 into a date.
    if isinstance(value, dt.date):
        return value.isoformat()[:10]
    text = _text(table, key, where, required=required)
    if text is not None and not _DATE_RE.fullmatch(text):
        raise CatalogueError(f"{where}: `{key}` must be a YYYY-MM-DD date, got {text!r}")
    return text
