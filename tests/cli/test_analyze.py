"""`laptime analyze` through click's CliRunner on real report files written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli.main import cli

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testsuite name="pytest" errors="0" failures="1" skipped="1" tests="5" time="22.5">
    <testcase classname="tests.test_transforms" name="test_augmix[a]"
              file="tests/test_transforms.py" line="10" time="3.0"/>
    <testcase classname="tests.test_transforms" name="test_augmix[b]"
              file="tests/test_transforms.py" line="10" time="5.0"/>
    <testcase classname="tests.test_transforms" name="test_other"
              file="tests/test_transforms.py" line="40" time="2.0">
      <failure message="assert 1 == 2">assert 1 == 2</failure>
    </testcase>
    <testcase classname="tests.test_models" name="test_resnet"
              file="tests/test_models.py" line="5" time="12.0"/>
    <testcase classname="tests.test_models" name="test_skipped"
              file="tests/test_models.py" line="9" time="0.0">
      <skipped message="no gpu">no gpu</skipped>
    </testcase>
  </testsuite>
</testsuites>
"""

DURATIONS = """============================= test session starts ==============================
platform linux -- Python 3.11.4, pytest-7.4.0, pluggy-1.2.0
collected 4 items

tests/test_a.py ....                                                     [100%]

============================= slowest 2 durations ==============================
3.00s call     tests/test_a.py::test_one
1.00s call     tests/test_a.py::test_two

(6 durations < 0.005s hidden.  Use -vv to show these durations.)
============================== 4 passed in 4.10s ===============================
"""


@pytest.fixture
def junit(tmp_path: Path) -> Path:
    path = tmp_path / "linux.xml"
    path.write_text(JUNIT)
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["analyze", *args])
    return result.exit_code, result.output


def test_json_by_file_has_the_contract_keys_and_hand_computed_shares(junit: Path):
    code, out = run(str(junit), "--by", "file", "--json")
    assert code == 0, out
    rows = {r["key"]: r for r in json.loads(out)}
    assert set(rows) == {"tests/test_models.py", "tests/test_transforms.py"}
    models = rows["tests/test_models.py"]
    assert models["runs"] == 2
    assert models["total_s"] == pytest.approx(12.0)
    assert models["share"] == pytest.approx(12.0 / 22.0)
    # One file = one job named after the file stem: the file's share of that job.
    assert models["parent"] == "linux"
    assert models["parent_share"] == pytest.approx(12.0 / 22.0)
    assert rows["tests/test_transforms.py"]["failures"] == 1
    assert list(rows) == ["tests/test_models.py", "tests/test_transforms.py"]


def test_function_within_file_strips_parametrize_ids(junit: Path):
    code, out = run(str(junit), "--by", "function", "--within", "file", "--json")
    assert code == 0, out
    augmix = next(r for r in json.loads(out) if r["key"].endswith("test_augmix"))
    assert augmix["runs"] == 2
    assert augmix["tests"] == 2
    assert augmix["total_s"] == pytest.approx(8.0)
    assert augmix["parent"] == "tests/test_transforms.py"
    assert augmix["parent_share"] == pytest.approx(0.8)


def test_junit_markers_are_unknown(junit: Path):
    code, out = run(str(junit), "--by", "marker", "--json")
    assert code == 0, out
    rows = json.loads(out)
    assert [r["key"] for r in rows] == ["(unknown)"]
    assert rows[0]["share"] == pytest.approx(1.0)


def test_table_shows_human_units_shares_and_a_completeness_footer(junit: Path):
    code, out = run(str(junit), "--by", "file")
    assert code == 0, out
    assert "tests/test_models.py" in out
    assert "54.5%" in out  # 12 of 22 s
    assert "12.0 s" in out
    assert "2 of 2 rows" in out
    assert "complete: 5 results" in out


def test_limit_and_file_filter(junit: Path):
    code, out = run(str(junit), "--by", "test", "--limit", "1", "--json")
    assert code == 0, out
    rows = json.loads(out)
    assert len(rows) == 1
    assert rows[0]["key"].endswith("test_resnet")
    code, out = run(str(junit), "--by", "file", "--file", "*transforms*", "--json")
    rows = json.loads(out)
    assert [r["key"] for r in rows] == ["tests/test_transforms.py"]
    assert rows[0]["share"] == pytest.approx(1.0)


def test_partial_durations_report_is_said_in_the_footer(tmp_path: Path):
    path = tmp_path / "durations.txt"
    path.write_text(DURATIONS)
    code, out = run(str(path), "--by", "file")
    assert code == 0, out
    assert "partial data" in out
    assert "6 rows hidden" in out


def test_errors_are_one_line_with_exit_1(junit: Path, tmp_path: Path):
    code, out = run(str(junit), "--by", "nope")
    assert code == 1
    assert "unknown dimension 'nope'" in out
    assert "Traceback" not in out
    code, out = run(str(tmp_path / "missing.xml"))
    assert code == 1
    assert "cannot read" in out
