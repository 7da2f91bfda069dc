"""Query results into pandas frames through COPY TO STDOUT: streamed, never one value.

`copy_frame` takes any SELECT as CSV, which pandas' C reader parses from the stream;
`copy_numeric_frame` takes fixed-width columns as binary COPY, which numpy views in place
(tests/server/test_kept_frames.py). PostgreSQL sends COPY one row per message, so no value
the server builds grows with the result (PostgreSQL caps one value at 1 GB; see
tests/server/test_streamed_reads.py). Queries are psycopg `sql` compositions with `%(name)s`
parameters: COPY takes none server-side, so psycopg binds them client-side, quoted.
`read_frame` is for the few-row reads whose JSON and timestamps psycopg decodes.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pandas as pd
import psycopg
from psycopg import sql
from sqlalchemy import Connection

from pgcodec.binary_copy import PgType, decode_binary_copy

# What PostgreSQL lets one value hold (MaxAllocSize - 1); a COPY row is one message.
PG_MAX_VALUE_BYTES = (1 << 30) - 1
# The largest message a read accepts: PostgreSQL's cap. Tests lower it to show that a read
# larger than the cap still arrives, as rows well under it.
MAX_VALUE_BYTES = PG_MAX_VALUE_BYTES


class ValueTooLarge(ValueError):
    """One piece of a read (a row) is larger than MAX_VALUE_BYTES."""


def copy_frame(
    conn: Connection,
    query: sql.Composable,
    params: Mapping[str, Any] | None = None,
    *,
    dtypes: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Run a SELECT and parse its rows, as COPY streams them, with pandas' C CSV reader.

    Python row objects cost far more than the query for the large frames rollups read; CSV
    parsed in C does not. NULL and the empty string both read as missing.
    """
    statement = sql.SQL("COPY ({}) TO STDOUT (FORMAT csv, HEADER)").format(query)
    with _raw(conn).cursor().copy(statement, params) as copy:
        stream = io.BufferedReader(_CopyStream(iter(copy)), buffer_size=1 << 20)
        return pd.read_csv(stream, dtype=dtypes, keep_default_na=False, na_values=[""])


def copy_numeric_frame(
    conn: Connection,
    query: sql.Composable,
    params: Mapping[str, Any] | None,
    spec: Sequence[tuple[str, PgType]],
) -> pd.DataFrame:
    """Run a SELECT of fixed-width, non-NULL columns named as in `spec`, as numpy columns.

    Binary COPY renders no value as text, and with fixed-width, non-NULL columns every row
    has the same layout, so numpy views the whole stream as one structured array.
    """
    columns = sql.SQL(", ").join(sql.Identifier("q", name) for name, _ in spec)
    statement = sql.SQL("COPY (SELECT {} FROM ({}) q) TO STDOUT (FORMAT binary)").format(
        columns, query
    )
    with _raw(conn).cursor().copy(statement, params) as copy:
        payload = bytearray()
        cap = MAX_VALUE_BYTES
        for piece in copy:
            if len(piece) > cap:
                raise _too_large(len(piece), cap)
            payload += piece
    return pd.DataFrame(decode_binary_copy(payload, spec))


def read_frame(
    conn: Connection, query: sql.Composed, params: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """Run a SELECT whose rows are few (runs, one test's history) as Python rows: psycopg's
    types (JSON, timestamps) as they are, numerics as floats (as pandas.read_sql does)."""
    cursor = _raw(conn).execute(query, params)
    assert cursor.description is not None
    names = [column.name for column in cursor.description]
    return pd.DataFrame.from_records(cursor.fetchall(), columns=names, coerce_float=True)


def _raw(conn: Connection) -> psycopg.Connection[Any]:
    """The psycopg connection under `conn`, in its transaction."""
    raw = conn.connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    return raw


def _too_large(size: int, cap: int) -> ValueTooLarge:
    return ValueTooLarge(f"a row of {size:,} bytes is over the {cap:,} a value may hold")


class _CopyStream(io.RawIOBase):
    """COPY's rows as a readable byte stream: pandas pulls it a buffer at a time."""

    def __init__(self, pieces: Iterator[Any]) -> None:
        self._pieces = pieces
        self._pending = bytearray()
        self._cap = MAX_VALUE_BYTES

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        # One loop per row, kept lean: most of a streamed read's Python time is spent here.
        want = len(buffer)
        pending, pieces, cap = self._pending, self._pieces, self._cap
        while len(pending) < want:
            piece = next(pieces, None)
            if piece is None:
                break
            if len(piece) > cap:
                raise _too_large(len(piece), cap)
            pending += piece
        n = min(want, len(pending))
        buffer[:n] = pending[:n]
        del pending[:n]  # bytearray drops its head without moving the rest
        return n
