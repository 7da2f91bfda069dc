"""pytest arguments that collect exactly a job's tests, under the invocation the history used.

A job is named by its coarsest members that hold only its tests: a whole file, a whole
class, a whole function (all its parametrizations: their ids can come out differently in
another process or invocation, e.g. when built from an unordered set), and a single nodeid
only where a function's parametrizations are split between jobs.

Nodeids are relative to pytest's rootdir, or, for a file outside it, to the argument that
found it: `pytest --pyargs pkg` run outside the package names its files relative to the
package's directory (`sub/test_x.py::t`). That directory, the one the history's nodeids are
relative to, is the `rootdir` here. Jobs of such a history run as `pytest --pyargs
--rootdir=R pkg.sub.test_x::Class::test`: the dotted module finds the file wherever the
package is installed, and `--rootdir` makes the job's nodeids the history's (without it,
naming modules changes them). A history run with paths is replayed with its paths, from the
directory it ran in (its rootdir).
"""

from __future__ import annotations

import posixpath
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

INVOCATIONS = ("paths", "pyargs")
_SITE = re.compile(r"/(?:site|dist)-packages/")


@dataclass(frozen=True)
class Invocation:
    """How the history's pytest named its tests: by paths, or `--pyargs` under `rootdir`."""

    mode: str = "paths"  # one of INVOCATIONS
    rootdir: str | None = None  # absolute dir the nodeids are relative to; None = unknown

    @property
    def replayable(self) -> bool:
        """False for `--pyargs` without a rootdir: module names cannot be known."""
        return self.mode != "pyargs" or bool(self.rootdir)

    def module_of(self, file: str) -> str:
        """The dotted module of a rootdir-relative test file (`a/test_x.py` -> `pkg.a.test_x`):
        the part after site-packages when the file is installed, else the rootdir's name on."""
        root = (self.rootdir or "").replace("\\", "/").rstrip("/")
        full = posixpath.normpath(posixpath.join(root, file.replace("\\", "/")))
        found = list(_SITE.finditer(full))
        if found:
            relative = full[found[-1].end() :]
        else:
            relative = posixpath.join(posixpath.basename(root), file) if root else file
        relative = posixpath.normpath(relative)
        if relative.endswith(".py"):
            relative = relative[:-3]
        return relative.replace("/", ".")

    def prefix_args(self) -> tuple[str, ...]:
        """Options every job passes before its members. `--rootdir` also moves pytest's
        conftest cut-off there, which would drop the conftests of the packages above it (a
        suite's skip rules, fixtures, parametrization): `--confcutdir` puts it back at the
        directory holding the top-level package."""
        if self.mode != "pyargs" or not self.rootdir:
            return ()
        root = self.rootdir.replace("\\", "/").rstrip("/")
        depth = len(self.module_of("x.py").split(".")) - 1  # packages from the top to root
        top_parent = root
        for _ in range(depth):
            top_parent = posixpath.dirname(top_parent)
        return ("--pyargs", f"--rootdir={self.rootdir}", f"--confcutdir={top_parent or '/'}")

    def member_arg(self, member: str) -> str:
        """A member (`file[::rest]`) as a positional argument of this invocation."""
        if self.mode != "pyargs" or not self.rootdir:
            return member
        file, sep, rest = member.partition("::")
        return self.module_of(file) + sep + rest

    def roots(self, files: Iterable[str]) -> list[str] | None:
        """What the catch-all job collects so every file is found: with paths the files'
        deepest common directory (none when that is the rootdir: pytest's default); None
        under `--pyargs`, where the history's targets (a package or a few of its modules)
        are not known, so that job lists its own members instead."""
        if self.prefix_args():
            return None
        dirs = [posixpath.dirname(f.replace("\\", "/")) for f in files]
        common = posixpath.commonpath(dirs) if dirs and all(dirs) else ""
        absolute = {d.startswith("/") for d in dirs}
        return [common] if common and common != "." and len(absolute) == 1 else []


def recorded_invocation(
    recorded: Iterable[tuple[str | None, str | None]],
    mode: str = "auto",
    rootdir: str | None = None,
) -> Invocation:
    """How the history's pytest ran: `mode`/`rootdir` when given, else the last of the runs'
    recorded (invocation, rootdir) pairs (oldest first) that says, else paths."""
    recorded_mode, recorded_root = None, None
    for run_mode, run_root in recorded:
        recorded_mode = run_mode or recorded_mode
        recorded_root = run_root or recorded_root
    chosen = mode if mode != "auto" else str(recorded_mode or "paths")
    if chosen not in INVOCATIONS:
        chosen = "paths"
    return Invocation(chosen, rootdir or (str(recorded_root) if recorded_root else None))


def levels(nodeid: str) -> list[str]:
    """A nodeid's selectable prefixes, coarsest first: file, classes, function, the id."""
    base, bracket, _ = nodeid.partition("[")
    parts = base.split("::")
    out = ["::".join(parts[: i + 1]) for i in range(len(parts))]
    if bracket:
        out.append(nodeid)
    return out


def coarsest_members(
    all_nodeids: Iterable[str], job_nodeids: Iterable[str], *, by_prefix: bool = False
) -> list[str]:
    """The fewest members that select exactly `job_nodeids` out of `all_nodeids`.

    Positional arguments match whole names (`f::test_a` runs `test_a[...]` only); with
    `by_prefix` the members are for `--deselect`, which matches any nodeid starting with the
    text, so a member is only used where no other test's nodeid starts with it."""
    mine_ids = sorted(set(job_nodeids))
    everything = sorted(set(all_nodeids) | set(mine_ids))
    total = Counter(p for n in everything for p in levels(n))
    mine = Counter(p for n in mine_ids for p in levels(n))
    out: dict[str, None] = {}
    for nodeid in mine_ids:
        for prefix in levels(nodeid):
            whole = mine[prefix] == total[prefix]
            if whole and (not by_prefix or _starting_with(everything, prefix) == total[prefix]):
                # A file whose one test is an item named "" is named by that item: a `.py`
                # file named alone would also be imported as a test module (Pygments' example
                # files), which the suite's own collection never does.
                lone = not by_prefix and nodeid == prefix + "::" and total[prefix] == 1
                out[nodeid if lone else prefix] = None
                break
        else:
            out[nodeid] = None  # a nodeid another one starts with: the best there is
    return list(out)


def _starting_with(ordered: Sequence[str], prefix: str) -> int:
    """How many of the sorted strings start with `prefix`."""
    return len(_starting(ordered, prefix))


def exclusion_args(members: Iterable[str]) -> tuple[str, ...]:
    """pytest options leaving `members` out: a whole Python file by `--ignore`, which skips
    its import and collection (`--deselect` still pays both), anything else by `--deselect`
    (a file's by `file::`, which no other file's nodeids start with).

    Why not `--ignore` for every file: pytest rebuilds its list of ignored paths for every
    path it visits, so N ignores over V visited paths cost N x V path operations (770 data
    files ignored over Pygments' tree took 11.6 s to collect, the whole suite 1.3 s), while
    collecting a data file costs next to nothing; a Python file's import is what is saved."""
    out: list[str] = []
    for member in members:
        if "::" in member:
            out.extend(("--deselect", member))
        elif member.endswith(".py"):
            out.extend(("--ignore", member))
        else:
            out.extend(("--deselect", member + "::"))
    return tuple(out)


def job_args(
    all_nodeids: Sequence[str],
    nodeids_per_job: Sequence[Sequence[str]],
    invocation: Invocation,
    *,
    home: int | None = None,
) -> list[tuple[str, ...]]:
    """Each job's pytest arguments. Job `home` (if any) runs everything but the other jobs'
    tests (`exclusion_args`), so a test added after the plan still runs somewhere; under
    `--pyargs` it lists its members like the others (see Invocation.roots)."""
    out: list[tuple[str, ...]] = []
    for i, nodeids in enumerate(nodeids_per_job):
        roots = invocation.roots({n.split("::", 1)[0] for n in all_nodeids})
        if i == home and roots is not None:
            others = [n for j, ids in enumerate(nodeids_per_job) if j != home for n in ids]
            out.append(_catch_all_args(all_nodeids, nodeids, others, invocation, roots))
            continue
        members = coarsest_members(all_nodeids, nodeids)
        if roots is not None and any(_is_data_module(m) for m in members):
            out.append(_with_data_dirs(all_nodeids, nodeids, members, invocation))
            continue
        args = tuple(invocation.member_arg(m) for m in members)
        out.append((*invocation.prefix_args(), *args) if args else ())
    return out


def _is_data_module(member: str) -> bool:
    """A `.py` file whose one test is an item named "" (a conftest collects it as data)."""
    file, sep, rest = member.partition("::")
    return bool(sep) and not rest and file.endswith(".py") and "/" in file


def _with_data_dirs(
    all_nodeids: Sequence[str],
    mine: Sequence[str],
    members: Sequence[str],
    invocation: Invocation,
) -> tuple[str, ...]:
    """A job's arguments when it holds `.py` files collected as data: pytest imports any
    `.py` file it is given (by path or by `path::`) as a test module, so their directories are
    named instead, less what other jobs run there, as the catch-all job names its roots."""
    dirs: set[str] = set()
    for member in sorted((m for m in members if _is_data_module(m)), key=len):
        folder = posixpath.dirname(_file_of(member))
        if not any(folder == d or folder.startswith(d + "/") for d in dirs):
            dirs.add(folder)

    def inside(nodeid: str) -> bool:
        return any(nodeid.startswith(d + "/") for d in dirs)

    mine_set = set(mine)
    out = [invocation.member_arg(m) for m in members if not inside(m)]
    for folder in sorted(dirs):
        there = [n for n in all_nodeids if n.startswith(folder + "/")]
        others = [n for n in there if n not in mine_set]
        mine_there = [n for n in there if n in mine_set]
        out.extend(_catch_all_args(there, mine_there, others, Invocation(), [folder]))
    return (*invocation.prefix_args(), *out)


def _catch_all_args(
    all_nodeids: Sequence[str],
    mine: Sequence[str],
    others: Sequence[str],
    invocation: Invocation,
    roots: list[str],
) -> tuple[str, ...]:
    """The catch-all job's arguments: its roots less the other jobs' tests. Where
    `--deselect X` would also drop a test of its own (`f::test_a` drops `f::test_ab`: pytest
    matches the start of the nodeid), that file is ignored and its own tests there are named
    instead (a named path is collected even when ignored)."""
    members = coarsest_members(all_nodeids, others, by_prefix=True)
    everything = sorted(set(all_nodeids))
    taken = set(others)
    clashing = {
        _file_of(m)
        for m in members
        if "::" in m and not all(n in taken for n in _starting(everything, m))
    }
    if not clashing:
        return (*invocation.prefix_args(), *roots, *exclusion_args(members))
    kept = [m for m in members if _file_of(m) not in clashing]
    ignored = set(clashing) | {m for m in kept if "::" not in m}
    # Naming a test replaces pytest's default targets, and a directory named beside a test in
    # it swallows the test: name the entries the tests live in, down to where none holds a
    # named file (an ignored file named here would be collected after all).
    base = roots[0].rstrip("/") + "/" if roots else ""
    roots = sorted(_entries({_file_of(n) for n in everything}, base, clashing) - ignored)
    there = [n for n in all_nodeids if _file_of(n) in clashing]
    named = coarsest_members(there, [n for n in mine if _file_of(n) in clashing])
    return (
        *invocation.prefix_args(),
        *roots,
        *exclusion_args([*kept, *sorted(clashing)]),
        *(invocation.member_arg(m) for m in named),
    )


def _entries(files: set[str], base: str, avoid: set[str]) -> set[str]:
    """Paths under `base` (files or directories) covering `files`, none a directory holding
    a path of `avoid`."""
    out = set()
    for file in files:
        parts = file[len(base) :].split("/")
        for depth in range(1, len(parts) + 1):
            entry = base + "/".join(parts[:depth])
            if depth == len(parts) or not any(a.startswith(entry + "/") for a in avoid):
                out.add(entry)
                break
    return out


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _starting(ordered: Sequence[str], prefix: str) -> Sequence[str]:
    """The sorted strings that start with `prefix`."""
    return ordered[bisect_left(ordered, prefix) : bisect_left(ordered, prefix + "\U0010ffff")]


def file_key(nodeid: str) -> str:
    """A nodeid with its file as pytest's JUnit classname writes it (`a/b.py` -> `a.b`)."""
    file, sep, rest = nodeid.partition("::")
    if file.endswith(".py"):
        file = file[:-3]
    return file.replace("/", ".") + sep + rest


def match_collected(history: Iterable[str], collected: Iterable[str]) -> Mapping[str, str]:
    """History nodeids that are not collected, renamed to the one collected nodeid with the
    same dotted form: a JUnit-only history's paths are a guess where a directory holds a
    dot (`foo.bar/`), and the collected files settle it."""
    collected_set = set(collected)
    by_key: dict[str, list[str]] = {}
    for nodeid in collected_set:
        by_key.setdefault(file_key(nodeid), []).append(nodeid)
    renamed: dict[str, str] = {}
    for nodeid in history:
        if nodeid in collected_set:
            continue
        found = by_key.get(file_key(nodeid), [])
        if len(found) == 1:
            renamed[nodeid] = found[0]
    return renamed
