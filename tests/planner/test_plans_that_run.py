"""Plans that run: every emitted pytest selection collects exactly the planned tests,
under the invocation the history used (paths or `--pyargs`), with a real pytest.

The suite is a tiny package installed under `venv/lib/python3.11/site-packages` (so a JUnit
history run by paths carries `python3.11` in its classnames), with classes, parametrized
functions, a `test_p`/`test_pa` pair (a `--deselect` prefix trap), parametrize ids that
differ in every process, and a warning at import (so `--collect-only -q` prints a warnings
summary quoting a nodeid).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from analysis.ci.pytest_selection import Invocation, coarsest_members, job_args, match_collected
from app.cli.main import cli
from laptime_ci.shards import read_collected

SITE = Path("venv/lib/python3.11/site-packages")
ALPHA = """
import pytest

class TestA:
    def test_1(self): pass
    def test_2(self): pass
    def test_3(self): pass

@pytest.mark.parametrize("n", range(6))
def test_p(n): pass

def test_pa(): pass
"""
BETA = """
import warnings
import pytest

warnings.warn("Test: fakepkg/tests/test_alpha.py::TestA::test_1 (a quoted nodeid)")

class Box:
    pass

BOXES = [Box() for _ in range(3)]

# ids built from object identity: different in every process, like ids from a set's order.
@pytest.mark.parametrize("box", BOXES, ids=lambda b: f"box{id(b) % 99991}")
def test_varying(box): pass

@pytest.mark.parametrize("k", ["x", "y"])
def test_b(k): pass

def test_c(): pass
"""
# The top package's conftest parametrizes: a job that loses it collects other tests.
CONFTEST = """
def pytest_generate_tests(metafunc):
    if "z" in metafunc.fixturenames:
        metafunc.parametrize("z", [1, 2])
"""
GAMMA = """
class TestG:
    class TestInner:
        def test_i(self): pass
    def test_g(self): pass

def test_solo(): pass

def test_z(z): pass
"""
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]


def _suite(root: Path) -> Path:
    """The package under root/venv/.../site-packages; returns site-packages."""
    site = root / SITE
    tests = site / "fakepkg" / "tests"
    (tests / "sub").mkdir(parents=True)
    (site / "fakepkg" / "__init__.py").write_text("")
    (site / "fakepkg" / "conftest.py").write_text(CONFTEST)
    (tests / "__init__.py").write_text("")
    (tests / "sub" / "__init__.py").write_text("")
    (tests / "test_alpha.py").write_text(ALPHA)
    (tests / "test_beta.py").write_text(BETA)
    (tests / "sub" / "test_gamma.py").write_text(GAMMA)
    return site


def _pytest(cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(site),
        "PYTHONDONTWRITEBYTECODE": "1",
        # Only pytest's own plugins: each run starts in a fraction of the time.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    return subprocess.run(
        [*PYTEST, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _seconds(name: str) -> str:
    """A deterministic, uneven duration per test name (no real timing in the test)."""
    return str(1 + zlib.crc32(name.encode()) % 9)


@pytest.fixture(scope="module", params=["paths", "pyargs"])
def history(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, object]:
    """A JUnit history of the suite run one way, with its real collected output (read only:
    shared by the tests of this module)."""
    tmp_path = tmp_path_factory.mktemp(request.param)
    site = _suite(tmp_path)
    if request.param == "paths":
        cwd, where = tmp_path, [str(SITE / "fakepkg")]
        extra: list[str] = []
    else:
        cwd = tmp_path / "work"
        cwd.mkdir()
        # A subpackage target: nodeids are relative to its directory, below the conftest.
        where = ["--pyargs", "fakepkg.tests"]
        extra = ["--invocation", "pyargs", "--rootdir", str(site / "fakepkg" / "tests")]
    ran = _pytest(cwd, site, *where, "--junitxml", str(tmp_path / "h.xml"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    xml = (tmp_path / "h.xml").read_text()
    xml = re.sub(
        r'(<testcase [^>]*?name="([^"]*)"[^>]*?time=")[^"]*"',
        lambda m: m.group(1) + _seconds(m.group(2)) + '"',
        xml,
    )
    (tmp_path / "h.xml").write_text(xml)
    collected = _pytest(cwd, site, *where, "--collect-only", "-q")
    assert "warnings summary" in collected.stdout  # the trap is really there
    return {
        "cwd": cwd,
        "site": site,
        "report": str(tmp_path / "h.xml"),
        "extra": extra,
        "collected_text": collected.stdout,
        "mode": request.param,
    }


def _collect(history: dict[str, object], args: list[str]) -> list[str]:
    """What `pytest --collect-only -q ARGS` collects in the history's directory."""
    assert args, "an empty selection would run the whole suite"
    done = _pytest(history["cwd"], history["site"], *args, "--collect-only", "-q")  # type: ignore[arg-type]
    assert done.returncode == 0, done.stdout + done.stderr
    return read_collected(done.stdout)


def _laptime(history: dict[str, object], command: str, *args: str) -> str:
    """`laptime COMMAND REPORT ARGS` with the history's invocation options; its stdout."""
    extra = list(history["extra"])  # type: ignore[call-overload]
    result = CliRunner().invoke(cli, [command, str(history["report"]), *args, *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def _comparable(nodeids: list[str]) -> Counter[str]:
    """Nodeids with the per-process ids of test_varying blanked (their count still counts)."""
    return Counter(re.sub(r"test_varying\[.*\]$", "test_varying[]", n) for n in nodeids)


def _assert_partition(history: dict[str, object], per_job: list[list[str]]) -> None:
    everything = read_collected(str(history["collected_text"]))
    assert len(everything) == 21
    union: Counter[str] = Counter()
    for nodeids in per_job:
        union += _comparable(nodeids)
    assert union == _comparable(everything)  # each test once, in some job


# `--granularity test` names single tests by design: ids that change per process cannot run.
@pytest.mark.parametrize("granularity", ["auto", "file"])
def test_plan_jobs_collect_exactly_the_planned_tests(
    history: dict[str, object], granularity: str
) -> None:
    args = ("--jobs", "3", "--granularity", granularity, "--overhead", "0", "--json")
    plan = json.loads(_laptime(history, "plan", *args))
    assert plan["verdict"] == "split"
    per_job = [_collect(history, job["pytest_args"]) for job in plan["jobs"]]
    assert [len(ids) for ids in per_job] == [job["n_tests"] for job in plan["jobs"]]
    _assert_partition(history, per_job)
    if history["mode"] == "paths":  # the JUnit path kept its directory's dot
        assert all("python3.11/site-packages" in a for j in plan["jobs"] for a in j["members"])
    # A function's parametrizations are named by the function, never by ids from history.
    assert not any("test_varying[" in a for j in plan["jobs"] for a in j["pytest_args"])
    matrix = plan["config"]["github_actions"]
    for job in plan["jobs"]:
        assert json.dumps(shlex.join(job["pytest_args"]))[1:-1] in matrix.replace("''", "'")


def test_shards_from_collected_output_collect_exactly_their_tests(
    history: dict[str, object], tmp_path: Path
) -> None:
    collected = tmp_path / "collected.txt"
    collected.write_text(str(history["collected_text"]))
    per_job = []
    for index in (1, 2, 3):
        args = ("--total", "3", "--index", str(index), "--collected", str(collected))
        per_job.append(_collect(history, _laptime(history, "shard", *args).splitlines()))
    _assert_partition(history, per_job)


# What pytest 8/9 prints for `--collect-only -q` with warnings (abridged from a real run).
COLLECT_ONLY = """\
algorithms/tests/test_a.py::test_petersen
algorithms/tests/test_a.py::TestB::test_x[a b-1]
utils/tests/test_u.py::test_empty

=============================== warnings summary ===============================
../venv/lib/python3.11/site-packages/_pytest/python.py:144
  /venv/lib/python3.11/site-packages/_pytest/python.py:144: PytestRemovedIn10Warning: bad
  Test: algorithms/tests/test_a.py::TestB::test_y, argvalues type: product
    metafunc.parametrize(*marker.args, **marker.kwargs, _param_mark=marker)

algorithms/tests/test_a.py::test_petersen
  /x/test_a.py:3: DeprecationWarning: old

-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
3 tests collected in 8.31s
"""


def test_collected_input_takes_only_the_collected_nodeids() -> None:
    assert read_collected(COLLECT_ONLY) == [
        "algorithms/tests/test_a.py::test_petersen",
        "algorithms/tests/test_a.py::TestB::test_x[a b-1]",
        "utils/tests/test_u.py::test_empty",
    ]


def test_members_are_the_coarsest_and_deselect_never_catches_a_neighbour() -> None:
    everything = ["a.py::T::t1", "a.py::T::t2", "a.py::f[1]", "a.py::f[2]", "a.py::fx", "b.py::g"]
    job = ["a.py::T::t1", "a.py::T::t2", "a.py::f[1]", "a.py::f[2]"]
    assert coarsest_members(everything, job) == ["a.py::T", "a.py::f"]
    # `--deselect a.py::f` would also drop a.py::fx: the ids are named instead.
    assert coarsest_members(everything, job, by_prefix=True) == [
        "a.py::T",
        "a.py::f[1]",
        "a.py::f[2]",
    ]
    assert coarsest_members(everything, [*job, "a.py::fx"]) == ["a.py"]


def test_the_catch_all_job_never_collects_another_jobs_whole_file() -> None:
    # `--deselect` still imports and collects a file; `--ignore` skips it, so the job that
    # runs "everything else" pays only for its own files' collection, as the model prices it.
    ids = ["a.py::t1", "a.py::t2", "b.py::T::t", "b.py::u", "c.py::v"]
    args = job_args(
        ids, [["a.py::t1", "a.py::t2", "b.py::T::t"], ["b.py::u", "c.py::v"]], Invocation(), home=0
    )
    assert args[0] == ("--deselect", "b.py::u", "--ignore", "c.py")
    assert args[1] == ("b.py::u", "c.py")


def test_the_catch_all_job_does_not_import_the_ignored_files(tmp_path: Path) -> None:
    (tmp_path / "test_home.py").write_text("def test_1(): pass\ndef test_2(): pass\n")
    # Importing this file leaves a trace: the catch-all job must not.
    (tmp_path / "test_far.py").write_text(
        "import pathlib\npathlib.Path('imported').write_text('x')\ndef test_far(): pass\n"
    )
    ids = ["test_home.py::test_1", "test_home.py::test_2", "test_far.py::test_far"]
    home, far = job_args(ids, [ids[:2], ids[2:]], Invocation(), home=0)
    ran = _pytest(tmp_path, tmp_path, *home, "--collect-only", "-q")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert read_collected(ran.stdout) == ids[:2]
    assert not (tmp_path / "imported").exists()
    other = _pytest(tmp_path, tmp_path, *far, "--collect-only", "-q")
    assert read_collected(other.stdout) == ids[2:]


def test_pyargs_members_are_modules_under_the_history_rootdir() -> None:
    replay = Invocation("pyargs", "/venv/lib/python3.11/site-packages/nx")
    ids = ["alg/tests/test_a.py::T::t", "alg/tests/test_a.py::u", "utils/test_b.py::v"]
    head = (
        "--pyargs",
        f"--rootdir={replay.rootdir}",
        "--confcutdir=/venv/lib/python3.11/site-packages",
    )
    assert job_args(ids, [ids[:1], ids[1:]], replay, home=1) == [
        (*head, "nx.alg.tests.test_a::T"),
        (*head, "nx.alg.tests.test_a::u", "nx.utils.test_b"),
    ]


def test_junit_paths_are_settled_by_the_collected_files() -> None:
    history = ["foo/bar/test_x.py::t", "kept.py::t"]
    collected = ["foo.bar/test_x.py::t", "kept.py::t"]
    assert match_collected(history, collected) == {"foo/bar/test_x.py::t": "foo.bar/test_x.py::t"}


@pytest.mark.parametrize("where", ["", "pkg/tests/", "pkg/tests/unit/"])
def test_the_catch_all_job_keeps_a_test_another_jobs_test_name_starts(
    tmp_path: Path, where: str
) -> None:
    # `--deselect f::test_bessel` also drops f::test_bessel_zeros (pytest matches the start of
    # the nodeid). Seen on mpmath: test_bessel_zeros ran in no job of a 3-job plan.
    (tmp_path / where).mkdir(parents=True, exist_ok=True)
    (tmp_path / where / "test_f.py").write_text(
        "def test_bessel(): pass\ndef test_bessel_zeros(): pass\n"
        "def test_bessel_zeros_extra(): pass\ndef test_other(): pass\n"
    )
    (tmp_path / where / "test_g.py").write_text("def test_g(): pass\n")
    (tmp_path / where / "test_h.py").write_text("def test_h(): pass\n")
    # A sibling directory: the catch-all job's root is then above the clashing file's.
    (tmp_path / "pkg" / "other").mkdir(parents=True)
    (tmp_path / "pkg" / "other" / "test_k.py").write_text("def test_k(): pass\n")
    names = ["test_bessel", "test_bessel_zeros", "test_bessel_zeros_extra", "test_other"]
    ids = [f"{where}test_f.py::{n}" for n in names]
    ids += [f"{where}test_g.py::test_g", f"{where}test_h.py::test_h", "pkg/other/test_k.py::test_k"]
    jobs = [[ids[1], ids[3], ids[5], ids[6]], [ids[0], ids[4]], [ids[2]]]
    per_job = []
    for args in job_args(ids, jobs, Invocation(), home=0):
        ran = _pytest(tmp_path, tmp_path, *args, "--collect-only", "-q")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        per_job.append(read_collected(ran.stdout))
    assert [sorted(j) for j in per_job] == [sorted(j) for j in jobs]


def test_a_python_file_collected_as_data_is_named_by_its_item(tmp_path: Path) -> None:
    # Pygments collects tests/examplefiles/**/*.py as data (one item named ""); named alone as
    # a path, pytest also imports it as a test module, which fails.
    (tmp_path / "conftest.py").write_text(
        "import pytest\n"
        "class Data(pytest.File):\n"
        "    def collect(self):\n"
        "        yield Item.from_parent(self, name='')\n"
        "class Item(pytest.Item):\n"
        "    def runtest(self): pass\n"
        "def pytest_collect_file(parent, file_path):\n"
        "    if file_path.parent.name == 'examples':\n"
        "        return Data.from_parent(parent, path=file_path)\n"
    )
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "broken.py").write_text("this is not python\n")
    (tmp_path / "examples" / "data.txt").write_text("x\n")
    (tmp_path / "test_a.py").write_text("def test_a(): pass\n")
    ids = ["examples/broken.py::", "examples/data.txt::", "test_a.py::test_a"]
    for jobs in ([ids[:2], ids[2:]], [ids[2:], ids[:2]], [ids[:1], ids[1:]]):
        per_job = []
        for args in job_args(ids, jobs, Invocation(), home=0):
            ran = _pytest(tmp_path, tmp_path, *args, "--collect-only", "-q")
            assert ran.returncode == 0, ran.stdout + ran.stderr
            per_job.append(read_collected(ran.stdout))
        assert [sorted(j) for j in per_job] == [sorted(j) for j in jobs]


def test_the_catch_all_job_deselects_other_jobs_data_files() -> None:
    # pytest rebuilds its --ignore list for every path it visits: 770 ignored data files made
    # Pygments' catch-all job collect in 11.6 s (the whole suite in 1.3 s). A data file costs
    # nothing to collect; only a Python file's import is worth an --ignore.
    ids = ["a.py::t", "data/x.txt::", "data/x.txt2::", "b.py::u"]
    args = job_args(
        ids, [["a.py::t", "data/x.txt2::"], ["data/x.txt::", "b.py::u"]], Invocation(), home=0
    )
    assert args[0] == ("--ignore", "b.py", "--deselect", "data/x.txt::")
