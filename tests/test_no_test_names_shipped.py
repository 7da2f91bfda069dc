"""Shipped code names no function `test_*`: readers and greps (and pytest's own collection,
were a shipped module ever collected) take such a function for a test."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["analysis", "app", "ingest", "model", "figures", "demo", "client/laptime_ci"]


def _test_named_functions(root: Path = ROOT, packages: list[str] = SHIPPED) -> list[str]:
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    node.name.startswith("test_")
                ):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    return found


def test_no_shipped_function_is_named_like_a_test() -> None:
    assert _test_named_functions() == []


def test_the_check_sees_a_test_named_function(tmp_path: Path) -> None:
    """The walk finds what it forbids (a guard against a check that never looks)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("class A:\n    def test_x(self): ...\n")
    assert _test_named_functions(tmp_path, ["pkg"]) == ["pkg/m.py:2 test_x"]
    assert all((ROOT / p).is_dir() for p in SHIPPED)
