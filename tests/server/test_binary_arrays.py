"""numpy columns sent as binary array parameters arrive as the same values in PostgreSQL."""

from __future__ import annotations

import math

import numpy as np
import psycopg
import pytest

from ingest.pg_arrays import Float4Array, Float8Array, Int4Array, Int8Array
from tests.conftest import Database


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_columns_round_trip_through_unnest(database: Database, n: int) -> None:
    rng = np.random.default_rng(n)
    big = rng.integers(-(2**62), 2**62, n)
    small = rng.integers(-(2**30), 2**30, n)
    floats = rng.normal(size=n)
    floats[::7] = np.nan
    reals = rng.normal(size=n).astype(np.float32)
    with psycopg.connect(database.dsn) as conn:
        rows = conn.execute(
            "SELECT a, b, nullif(c, 'NaN'), d, pg_typeof(c)::text FROM "
            "unnest(%b, %b, %b, %b) AS s(a, b, c, d)",
            (Int8Array(big), Int4Array(small), Float8Array(floats), Float4Array(reals)),
        ).fetchall()
        empty = conn.execute("SELECT cardinality(%b)", (Int8Array(big),)).fetchone()
    assert empty == (n,)
    assert len(rows) == n
    for i, (a, b, c, d, kind) in enumerate(rows):
        assert (a, b) == (int(big[i]), int(small[i]))
        assert c is None if math.isnan(floats[i]) else c == floats[i]
        assert d == pytest.approx(float(reals[i]), rel=1e-6)
        assert kind == "double precision"
