"""Query results into pandas frames without Python row objects: the two fast read paths.

`copy_frame` takes any SELECT through one CSV text value; `copy_numeric_frame` takes
fixed-width columns as binary arrays numpy views in place (tests/server/test_kept_frames.py).
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd
import psycopg
from sqlalchemy import Connection, text

from pgcodec.binary_copy import PgType, decode_binary_array

_NAMED_PARAM = re.compile(r"(?<![:\w]):(\w+)")


def copy_frame(
    conn: Connection, query: str, params: dict[str, Any], *, dtypes: dict[str, str] | None = None
) -> pd.DataFrame:
    """Run a SELECT and parse its rows with pandas' C CSV reader.

    Python row objects, and even COPY's one message per row, cost far more than the query for
    the large frames rollups read, so the server renders the whole result as ONE CSV text value
    (string_agg) that psycopg hands over in one piece.
    """
    raw = conn.connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    rendered = psycopg.ClientCursor(raw).mogrify(_NAMED_PARAM.sub(r"%(\1)s", query), params)
    probe = raw.execute(f"SELECT * FROM ({rendered}) q LIMIT 0")
    assert probe.description is not None
    names = [column.name for column in probe.description]
    fields = []
    for column in probe.description:
        ident = '"' + column.name.replace('"', '""') + '"'
        if column.type_code in _TEXT_OIDS:
            # CSV quoting: double the quotes; NULL stays an empty unquoted field.
            fields.append(f"""coalesce('"' || replace(q.{ident}, '"', '""') || '"', '')""")
        else:
            fields.append(f"coalesce(q.{ident}::text, '')")
    line = " || ',' || ".join(fields)
    row = raw.execute(f"SELECT string_agg({line}, E'\\n') FROM ({rendered}) q").fetchone()
    body = row[0] if row and row[0] else ""
    text_csv = ",".join(names) + "\n" + body
    return pd.read_csv(io.StringIO(text_csv), dtype=dtypes, keep_default_na=False, na_values=[""])


def copy_numeric_frame(
    conn: Connection, query: str, params: dict[str, Any], spec: Sequence[tuple[str, PgType]]
) -> pd.DataFrame:
    """Run a SELECT of fixed-width, non-NULL columns named as in `spec`, as numpy columns.

    The server sends each column as ONE binary array value: no value is rendered as text and
    there is no message per row, so numpy views each column in place.
    """
    columns = ", ".join(f'array_send(array_agg(q."{name}"))' for name, _ in spec)
    row = conn.execute(text(f"SELECT {columns} FROM ({query}) q"), params).one()
    return pd.DataFrame(
        {name: decode_binary_array(row[i], pg_type) for i, (name, pg_type) in enumerate(spec)}
    )


# text and varchar: the columns whose values need CSV quoting.
_TEXT_OIDS = frozenset({25, 1043})
