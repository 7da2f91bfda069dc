"""Nodeids rebuilt from real pytest --junitxml output equal the ones pytest itself reports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ingest.parsers import parse_report

SUITE = {
    "pytest.ini": "[pytest]\naddopts =\n",
    "test_root.py": "def test_at_root():\n    pass\n",
    "tests/__init__.py": "",
    "tests/test_plain.py": (
        "import pytest\n\n"
        "def test_one():\n    pass\n\n"
        "@pytest.mark.parametrize('a, b', [(1, 'x'), (2.5, 'y.z')])\n"
        "def test_params(a, b):\n    assert a != 2.5\n\n"
        "@pytest.mark.skip(reason='not today')\n"
        "def test_skipped():\n    pass\n"
    ),
    "tests/pkg/__init__.py": "",
    "tests/pkg/sub_dir/__init__.py": "",
    "tests/pkg/sub_dir/test_deep.py": (
        "import pytest\n\n"
        "class TestOuter:\n"
        "    def test_method(self):\n        pass\n\n"
        "    class TestInner:\n"
        "        @pytest.mark.parametrize('n', [0, 1], ids=['zero', 'one'])\n"
        "        def test_nested(self, n):\n            pass\n\n"
        "def test_module_level():\n    pass\n"
    ),
    "tests/other/test_no_init.py": "class TestLonely:\n    def test_it(self):\n        pass\n",
}


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("realsuite")
    for rel, text in SUITE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def run_pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def collected(suite_dir: Path) -> list[str]:
    out = run_pytest(suite_dir, "--collect-only", "-q").stdout
    nodeids = [line for line in out.splitlines() if "::" in line]
    assert len(nodeids) == 10, out
    return nodeids


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_rebuilt_nodeids_match_pytest(suite_dir: Path, collected: list[str], family: str) -> None:
    report_path = suite_dir / f"report-{family}.xml"
    run_pytest(suite_dir, f"--junitxml={report_path}", "-o", f"junit_family={family}")
    report = parse_report(report_path.read_bytes(), filename=str(report_path))
    results = report.results
    assert sorted(results["nodeid"]) == sorted(collected)
    by_id = results.set_index("nodeid")
    row = by_id.loc["tests/pkg/sub_dir/test_deep.py::TestOuter::TestInner::test_nested[one]"]
    assert row["file"] == "tests/pkg/sub_dir/test_deep.py"
    assert row["classname"] == "TestOuter::TestInner"
    assert row["function"] == "test_nested"
    assert row["params"] == "one"
    param_row = by_id.loc["tests/test_plain.py::test_params[2.5-y.z]"]
    assert (param_row["function"], param_row["params"]) == ("test_params", "2.5-y.z")
    assert param_row["outcome"] == "failed"
    assert by_id.loc["tests/test_plain.py::test_skipped", "outcome"] == "skipped"
    assert by_id.loc["test_root.py::test_at_root", "file"] == "test_root.py"
    assert by_id.loc["test_root.py::test_at_root", "classname"] is None
    assert (results["duration_s"] >= 0).all()
    assert report.session.wall_s is not None
