"""A job's tests in its runner's own words: the arguments and command each runner takes
(docs/runners.md).

Input is the same for every runner: per job, the nodeids it runs, and per test its selection
unit (the results' `file`: a path, a Java source path derived from the class, a Go package, a
nextest binary, a suite). A unit whose every test is in the job is selected whole; otherwise
its tests are named one by one where the runner can (`go test -run`, `-Dtest=C#m`,
`--tests C.m`, nextest `test(=name)`), and runners that select files only (Jest, Vitest,
RSpec, PHPUnit...) are planned with whole files (FILE_ONLY), so nothing runs twice.

Syntax follows each runner's documentation; see docs/runners.md.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

# Runners whose command line selects whole files only: plans keep their files whole.
FILE_ONLY = frozenset({"jest", "vitest", "playwright", "cypress", "mocha", "rspec", "phpunit"})
# Runners laptime writes a command for; any other runner gets a plain newline list.
COMMAND_RUNNERS = (
    "pytest",
    "jest",
    "vitest",
    "playwright",
    "cypress",
    "mocha",
    "rspec",
    "phpunit",
    "go",
    "maven",
    "gradle",
    "nextest",
    "dotnet",
    "gtest",
    "bazel",
)
_EXECUTION = re.compile(r" #\d+$")
_JAVA_ROOT = "src/test/java/"


@dataclass(frozen=True)
class JobSelection:
    """What one job passes to its runner: the arguments, and a full shell command."""

    runner: str
    args: tuple[str, ...]  # runner arguments, one list item per shell word
    command: str  # "" when laptime knows no command for the runner (plain list in `args`)


def java_class_of(unit: str) -> str:
    """The class of a derived Java path (`src/test/java/a/B.java` -> `a.B`); else unchanged."""
    if unit.startswith(_JAVA_ROOT) and unit.endswith(".java"):
        return unit[len(_JAVA_ROOT) : -len(".java")].replace("/", ".")
    return unit


def name_in_unit(nodeid: str, unit: str) -> str:
    """The test's own name inside its unit (execution suffix " #k" dropped)."""
    nodeid = _EXECUTION.sub("", nodeid)
    if nodeid.startswith(unit + "::"):
        return nodeid[len(unit) + 2 :]
    return nodeid.rsplit("::", 1)[-1]


@dataclass(frozen=True)
class _Picked:
    whole: list[str]  # units run whole, sorted
    tests: dict[str, list[str]]  # unit -> test names (partial units), sorted


def _pick(units: Mapping[str, str], all_units: pd.Series, nodeids: Sequence[str]) -> _Picked:
    """Split a job's nodeids into whole units and named tests of partial units."""
    counts = all_units.value_counts()
    mine: dict[str, list[str]] = {}
    for nodeid in nodeids:
        unit = units.get(nodeid, nodeid.split("::", 1)[0])
        mine.setdefault(unit, []).append(nodeid)
    whole = sorted(u for u, ids in mine.items() if len(ids) >= int(counts.get(u, 0)))
    tests = {
        u: sorted({name_in_unit(n, u) for n in ids})
        for u, ids in sorted(mine.items())
        if u not in set(whole)
    }
    return _Picked(whole, tests)


def nodeids_of_members(
    estimates: pd.DataFrame, members_per_job: Sequence[Sequence[str]]
) -> list[list[str]]:
    """Each job's nodeids from its plan members (files/units, `unit::Class` or nodeids, as
    `split_items.item_keys` cuts them, or a function `file::[Class::]test` with all its
    parametrizations): a test goes where its finest member is."""
    job_of = {str(m): j for j, members in enumerate(members_per_job) for m in members}
    out: list[list[str]] = [[] for _ in members_per_job]
    for nodeid, file in zip(
        estimates.index.astype(str), estimates["file"].astype(str), strict=True
    ):
        parts = nodeid.split("::")
        by_class = "::".join(parts[:2]) if len(parts) >= 3 else None
        function = nodeid.partition("[")[0]
        for key in (nodeid, function, by_class, file):
            if key is not None and key in job_of:
                out[job_of[key]].append(nodeid)
                break
    return out


def select_jobs(
    runner: str, units: pd.Series, nodeids_per_job: Sequence[Sequence[str]]
) -> list[JobSelection]:
    """Each job's selection for `runner`; `units` maps every planned nodeid to its unit."""
    unit_map = {str(k): str(v) for k, v in units.items()}
    out = []
    seen_go: set[tuple[str, str]] = set()
    for nodeids in nodeids_per_job:
        picked = _pick(unit_map, units.astype(str), [str(n) for n in nodeids])
        out.append(_selection(runner, picked, seen_go))
    return out


def _selection(runner: str, picked: _Picked, seen_go: set[tuple[str, str]]) -> JobSelection:
    whole, tests = picked.whole, picked.tests
    if runner in FILE_ONLY:
        files = sorted({*whole, *tests})
        return JobSelection(runner, tuple(files), _file_command(runner, files))
    if runner == "go":
        return _go(whole, tests, seen_go)
    if runner == "maven":
        entries = [java_class_of(u) for u in whole] + [
            f"{java_class_of(u)}#{'+'.join(names)}" for u, names in tests.items()
        ]
        arg = "-Dtest=" + ",".join(entries)
        args: tuple[str, ...] = (arg, "-Dsurefire.failIfNoSpecifiedTests=false")
        return JobSelection(runner, args, shlex.join(["mvn", "-B", "test", *args]))
    if runner == "gradle":
        filters = [java_class_of(u) for u in whole] + [
            f"{java_class_of(u)}.{name}" for u, names in tests.items() for name in names
        ]
        args = tuple(a for f in filters for a in ("--tests", f))
        return JobSelection(runner, args, shlex.join(["./gradlew", "test", *args]))
    if runner == "nextest":
        parts = [f"binary_id({_nextest(u)})" for u in whole] + [
            f"(binary_id({_nextest(u)}) & test(={_nextest(n)}))"
            for u, names in tests.items()
            for n in names
        ]
        args = ("-E", " | ".join(parts) or "none()")
        return JobSelection(runner, args, shlex.join(["cargo", "nextest", "run", *args]))
    if runner == "dotnet":
        parts = [f"FullyQualifiedName~{u}." for u in whole] + [
            f"FullyQualifiedName={u}.{n.split('(', 1)[0]}"
            for u, names in tests.items()
            for n in names
        ]
        args = ("--filter", "|".join(parts))
        return JobSelection(runner, args, shlex.join(["dotnet", "test", *args]))
    if runner == "gtest":
        parts = [f"{u}.*" for u in whole] + [f"{u}.{n}" for u, ns in tests.items() for n in ns]
        args = ("--gtest_filter=" + ":".join(parts),)
        return JobSelection(runner, args, "")  # the test binary's name is the project's
    if runner == "bazel":
        targets = sorted({*whole, *tests})
        return JobSelection(runner, tuple(targets), shlex.join(["bazel", "test", *targets]))
    # Anything else: the units (and tests of split units) as a plain list.
    listed = [*whole, *(f"{u}::{n}" for u, names in tests.items() for n in names)]
    return JobSelection(runner, tuple(listed), "")


def _file_command(runner: str, files: list[str]) -> str:
    base = {
        "jest": ["npx", "jest", "--ci", "--runTestsByPath"],
        "vitest": ["npx", "vitest", "run"],
        "playwright": ["npx", "playwright", "test"],
        "mocha": ["npx", "mocha"],
        "rspec": ["bundle", "exec", "rspec"],
        "phpunit": ["vendor/bin/phpunit"],
    }
    if runner == "cypress":
        return shlex.join(["npx", "cypress", "run", "--spec", ",".join(files)])
    return shlex.join([*base[runner], *files])


def _go(whole: list[str], tests: dict[str, list[str]], seen: set[tuple[str, str]]) -> JobSelection:
    """`go test` of the whole packages, then one `go test PKG -run '^(A|B)$'` per split one.

    Subtests run with their top-level test, so `-run` names top-level tests; a top-level
    test already given to an earlier job is not repeated (it would run twice)."""
    commands = [shlex.join(["go", "test", *whole])] if whole else []
    args: list[str] = list(whole)
    for package, names in tests.items():
        tops = sorted({n.split("/", 1)[0] for n in names} - {t for p, t in seen if p == package})
        seen.update((package, t) for t in tops)
        if not tops:
            continue
        pattern = "^(" + "|".join(re.escape(t) for t in tops) + ")$"
        commands.append(shlex.join(["go", "test", package, "-run", pattern]))
        args += [package, "-run", pattern]
    return JobSelection("go", tuple(args), " && ".join(commands))


def _nextest(text: str) -> str:
    """A string inside a nextest filterset matcher: `(`, `)` and `,` escaped."""
    return re.sub(r"([(),\\])", r"\\\1", text)
