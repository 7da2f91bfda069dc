"""Every parse error code is registered and documented; every raised code is registered."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.http.errors import API_ERROR_CODES
from ingest.parsers.errors import ERROR_CODES
from ingest.worker import WORKER_ERROR_CODES

REPO = Path(__file__).resolve().parents[2]
PARSERS_DIR = REPO / "ingest" / "parsers"
# Exception types whose first positional argument is an error code.
CODE_FIRST_ARG = {"ReportParseError", "Forbidden"}


def raised_codes() -> dict[str, str]:
    """code -> "file:line" for every string literal used as an error code in the parsers."""
    found: dict[str, str] = {}
    for path in sorted(PARSERS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            literals: list[ast.expr] = []
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name in CODE_FIRST_ARG and node.args:
                    literals.append(node.args[0])
                literals += [kw.value for kw in node.keywords if kw.arg == "code"]
            elif isinstance(node, ast.arguments):
                # `code: str = "json-schema"` style defaults.
                names = [a.arg for a in node.kwonlyargs]
                literals += [
                    d for a, d in zip(names, node.kw_defaults, strict=True) if a == "code" and d
                ]
            for literal in literals:
                if isinstance(literal, ast.Constant) and isinstance(literal.value, str):
                    found.setdefault(literal.value, f"{path.name}:{literal.lineno}")
    return found


def test_every_raised_code_is_registered() -> None:
    codes = raised_codes()
    # The scan must see the codes we know are raised, or it is scanning nothing.
    assert {"xml-dtd-forbidden", "not-junit", "node-too-large", "json-malformed"} <= set(codes)
    unregistered = {c: where for c, where in codes.items() if c not in ERROR_CODES}
    assert unregistered == {}


def test_every_registered_code_is_documented() -> None:
    doc = (REPO / "docs" / "errors.md").read_text()
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", doc, flags=re.MULTILINE))
    registered = set(ERROR_CODES) | set(WORKER_ERROR_CODES) | set(API_ERROR_CODES)
    assert registered - documented == set()
    assert documented - registered == set()


def test_the_worker_fails_uploads_with_registered_codes_only() -> None:
    sources = ("worker.py", "upload_ingest.py", "batch.py")
    used = {
        node.args[3].value
        for name in sources
        for node in ast.walk(ast.parse((REPO / "ingest" / name).read_text()))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", "") == "finish_failed"
        and isinstance(node.args[3], ast.Constant)
    }
    assert used == set(WORKER_ERROR_CODES)


def test_codes_are_kebab_case_with_one_line_descriptions() -> None:
    for code, description in ERROR_CODES.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", code), code
        assert description, code
        assert "\n" not in description, code
