"""Every API error code used is registered; the upload field limits in the docs are the code's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.http.errors import API_ERROR_CODES
from app.uploads.form import FIELD_MAX_CHARS

REPO = Path(__file__).resolve().parents[2]


def used_codes() -> dict[str, str]:
    """code -> "file:line" of every literal code passed to ApiError or error_response, or
    carried by a domain error class (`code = "..."`, mapped once by the app)."""
    found: dict[str, str] = {}
    paths = [*(REPO / "app").rglob("*.py"), *(REPO / "analysis").rglob("*.py")]
    for path in sorted(paths):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    target = item.target if isinstance(item, ast.AnnAssign) else None
                    if isinstance(item, ast.Assign) and len(item.targets) == 1:
                        target = item.targets[0]
                    value = getattr(item, "value", None)
                    if getattr(target, "id", "") == "code" and isinstance(value, ast.Constant):
                        found.setdefault(str(value.value), f"{path.name}:{item.lineno}")
                continue
            if not isinstance(node, ast.Call) or len(node.args) < 2:
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            code = node.args[1]
            if name in ("ApiError", "error_response") and isinstance(code, ast.Constant):
                found.setdefault(str(code.value), f"{path.name}:{node.lineno}")
    return found


def test_every_used_code_is_registered_and_every_registered_one_used() -> None:
    used = used_codes()
    assert {"token-required", "upload-too-large", "database-unavailable"} <= set(used)
    assert {c: where for c, where in used.items() if c not in API_ERROR_CODES} == {}
    assert set(API_ERROR_CODES) - set(used) == set()


def test_documented_field_limits_are_the_enforced_ones() -> None:
    doc = (REPO / "docs" / "errors.md").read_text()
    table = doc.split("### Upload field limits", 1)[1].split("\n#", 1)[0]
    documented = {
        name: int(limit) for name, limit in re.findall(r"^\| ([a-z_ ]+) \| (\d+) \|$", table, re.M)
    }
    assert documented == FIELD_MAX_CHARS
