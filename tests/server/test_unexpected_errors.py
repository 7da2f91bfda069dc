"""An unexpected error in an answer is a logged 500 `internal-error`, never a 422 carrying a
library's message (`Length of values (69) does not match length of index
(68)` reached users as if it were advice)."""

from __future__ import annotations

import ast
from pathlib import Path

import httpx
from sqlalchemy import Engine

from app.factory import create_app
from app.settings import Settings
from tests.conftest import Database
from tests.server.app_server import serve

ROOT = Path(__file__).resolve().parents[2]
PANDAS_MESSAGE = "Length of values (69) does not match length of index (68)"
# The edges that turn analysis answers into 422s or page messages.
ANSWER_EDGES = (
    "app/api/recommendations.py",
    "app/api/projects.py",
    "app/pages/recommendations.py",
    "app/pages/reductions.py",
    "app/pages/time_view.py",
)


def test_answer_edges_catch_only_answer_errors() -> None:
    """A bare ValueError (what pandas raises) is never mistaken for the data's answer."""
    caught: list[str] = []
    for name in ANSWER_EDGES:
        tree = ast.parse((ROOT / name).read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ExceptHandler)
                and node.type is not None
                and "ValueError" in ast.unparse(node.type)
                and not _parses_input(node)
            ):
                caught.append(f"{name}:{node.lineno}")
    assert caught == []


def _parses_input(handler: ast.ExceptHandler) -> bool:
    """True for a handler that re-raises as an AnswerError (reading a query's numbers)."""
    return any(
        isinstance(n, ast.Raise) and "AnswerError" in ast.unparse(n) for n in ast.walk(handler)
    )


def test_an_unexpected_value_error_is_a_500_without_its_text(
    database: Database, engine: Engine
) -> None:
    app = create_app(Settings(home=database.home, database_url=database.url), engine)

    @app.get("/api/v1/test-fault")
    def fault() -> None:
        raise ValueError(PANDAS_MESSAGE)

    with serve(app) as url:
        answer = httpx.get(f"{url}/api/v1/test-fault", timeout=30)
    assert answer.status_code == 500
    assert answer.json()["code"] == "internal-error"
    assert "Length of values" not in answer.text
