"""The client runs on Python 3.9: no newer syntax, runtime `X | Y`, or newer stdlib names.

ruff (target py39 in client/pyproject.toml) covers upgrades; this covers what it cannot see.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "client" / "laptime_ci"
SOURCES = sorted(PACKAGE.glob("*.py"))
# Names 3.10+ added that a 3.11 developer reaches for without noticing.
NEWER_IMPORTS = {
    ("datetime", "UTC"),
    ("typing", "TypeAlias"),
    ("typing", "ParamSpec"),
    ("typing", "Self"),
    ("typing", "Never"),
    ("typing", "TypeGuard"),
    ("typing", "NotRequired"),
    ("typing", "Required"),
    ("typing", "assert_never"),
    ("typing", "reveal_type"),
}
NEWER_KEYWORDS = {("dataclass", "slots"), ("dataclass", "kw_only"), ("zip", "strict")}


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes inside annotations (postponed by `from __future__ import annotations`)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = args.posonlyargs + args.args + args.kwonlyargs
            every += [a for a in (args.vararg, args.kwarg) if a is not None]
            annotations += [a.annotation for a in every if a.annotation is not None]
            if node.returns is not None:
                annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for annotation in annotations:
            inside.update(id(n) for n in ast.walk(annotation))
    return inside


BUILTIN_TYPES = {"int", "float", "str", "bytes", "bool", "dict", "list", "tuple", "set"}


def _is_type_operand(node: ast.expr) -> bool:
    """A side of `|` that makes it a type union rather than a bitwise or."""
    if isinstance(node, ast.Subscript):
        return True
    if isinstance(node, ast.Constant):
        return node.value is None
    return isinstance(node, ast.Name) and node.id in BUILTIN_TYPES


def problems_of(source: str) -> list[str]:
    """What in `source` Python 3.9 cannot run."""
    tree = ast.parse(source, feature_version=(3, 9))
    found = []
    postponed = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in tree.body)
    in_annotation = _annotation_nodes(tree) if postponed else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Match):
            found.append(f"line {node.lineno}: match statement")
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.BitOr)
            and id(node) not in in_annotation
            and any(_is_type_operand(side) for side in (node.left, node.right))
        ):
            found.append(f"line {node.lineno}: runtime `X | Y` type union")
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (node.module, alias.name) in NEWER_IMPORTS:
                    found.append(f"line {node.lineno}: {node.module}.{alias.name} is 3.10+")
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            for keyword in node.keywords:
                if (name, keyword.arg) in NEWER_KEYWORDS:
                    found.append(f"line {node.lineno}: {name}({keyword.arg}=) is 3.10+")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_client_module_runs_on_python_39(path: Path) -> None:
    assert problems_of(path.read_text()) == []


def test_the_checker_catches_what_it_claims() -> None:
    bad = (
        "from __future__ import annotations\n"
        "from datetime import UTC\n"
        "from dataclasses import dataclass\n"
        "Alias = tuple[str | None, int]\n"
        "def f(x: int | None) -> str | None:\n"
        "    return isinstance(x, int | float)\n"
        "@dataclass(slots=True)\n"
        "class C:\n"
        "    a: int | None = None\n"
    )
    assert len(problems_of(bad)) == 4  # UTC, the alias, isinstance, slots: not the annotations
