"""What a typed answer costs: a 100,000-row rollup serialised through its response model
(pydantic validate + dump, what FastAPI does with `response_model`) against the untyped path
it replaced (a dict through FastAPI's jsonable_encoder, then json.dumps), in one run.

    .venv/bin/python -m bench.bench_typed_answers            # 100,000 rows, 3 rounds
    .venv/bin/python -m bench.bench_typed_answers --rows 10000

Both produce the same JSON (checked). Ratio = typed / untyped (< 1: typed is faster).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from fastapi.encoders import jsonable_encoder

from app.schemas.reads import Rollup


def rollup_document(rows: int) -> dict[str, Any]:
    """A rollup answer as the route returns it: `rows` rows of every column."""
    row = {
        "runs": 3, "total_s": 10.5, "share": 0.001, "mean_s": 3.5, "p50_s": 3.0, "p95_s": 5.0,
        "max_s": 5.0, "failures": 0, "flaky": 0, "tests": 1, "setup_s": None, "call_s": 3.5,
        "teardown_s": None, "missing": 0, "parent": "tests/test_a.py", "parent_share": 0.25,
    }  # fmt: skip
    completeness = {
        "results": rows, "without_duration": 0, "runs": 3, "partial_runs": 0, "hidden_rows": 0,
        "partial_runs_unknown": 0, "complete": True,
    }  # fmt: skip
    return {
        "by": "test",
        "within": "function",
        "grand_total_s": 10.5 * rows,
        "keys_total": rows,
        "completeness": completeness,
        "rows": [{"key": f"tests/test_a.py::test_{i}", **row} for i in range(rows)],
    }


def typed(doc: dict[str, Any]) -> bytes:
    return Rollup.model_validate(doc).model_dump_json(exclude_unset=True).encode()


def untyped(doc: dict[str, Any]) -> bytes:
    return json.dumps(jsonable_encoder(doc)).encode()


def best_of(rounds: int, fn: Callable[[dict[str, Any]], bytes], doc: dict[str, Any]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn(doc)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    doc = rollup_document(args.rows)
    assert json.loads(typed(doc)) == json.loads(untyped(doc))
    base = best_of(args.rounds, untyped, doc)
    ours = best_of(args.rounds, typed, doc)
    print(
        f"{args.rows} rollup rows: untyped (jsonable_encoder + json.dumps) {base:.3f} s, "
        f"typed (response model) {ours:.3f} s, ratio {ours / base:.2f}"
    )


if __name__ == "__main__":
    main()
