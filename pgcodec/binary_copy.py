"""Build PostgreSQL binary COPY payloads from DataFrame columns with numpy, not per row, and
read fixed-width ones back (decode_binary_copy).

Rows are grouped by their layout (which fields are NULL, which value each low-cardinality text
field has); every group then has fixed-width rows, so one numpy structured array per group
encodes it. COPY does not care about row order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

PgType = Literal["int8", "int4", "int2", "float8", "float4", "bool", "date", "text"]

HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
TRAILER = b"\xff\xff"
_NUMPY: dict[str, str] = {
    "int8": ">i8",
    "int4": ">i4",
    "int2": ">i2",
    "float8": ">f8",
    "float4": ">f4",
    "bool": "u1",
    "date": ">i4",
}
_WIDTH = {"int8": 8, "int4": 4, "int2": 2, "float8": 8, "float4": 4, "bool": 1, "date": 4}
_PG_EPOCH = np.datetime64("2000-01-01", "D")


def _column_values(series: pd.Series, pg_type: str) -> np.ndarray:
    if pg_type == "date":
        days = pd.to_datetime(series).to_numpy(dtype="datetime64[D]")
        return (days - _PG_EPOCH).astype(np.int64)
    if pg_type == "bool":
        return series.fillna(False).to_numpy(dtype=bool).astype(np.uint8)
    if pg_type.startswith("float"):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return series.fillna(0).to_numpy(dtype=np.int64)


def encode_binary_copy(frame: pd.DataFrame, spec: Sequence[tuple[str, PgType]]) -> bytes:
    """Binary COPY payload for `frame`'s columns in `spec` order.

    Text columns must have few distinct values (outcomes, worker ids): each distinct value
    forms its own row layout. Missing values (NaN/None) become NULL.
    """
    n = len(frame)
    if n == 0:
        return HEADER + TRAILER
    layout_keys: list[np.ndarray] = []
    values: list[np.ndarray | None] = []
    text_values: list[list[bytes] | None] = []
    for name, pg_type in spec:
        series = frame[name]
        if pg_type == "text":
            codes, uniques = pd.factorize(series, use_na_sentinel=True)
            layout_keys.append(codes.astype(np.int64))
            values.append(None)
            text_values.append([str(u).encode() for u in uniques])
        else:
            layout_keys.append(series.isna().to_numpy().astype(np.int64))
            values.append(_column_values(series, pg_type))
            text_values.append(None)
    # One integer per row encodes its layout (mixed radix over the per-column codes), so a
    # hash factorize finds the groups in O(n) instead of sorting rows.
    combined = np.zeros(n, dtype=np.int64)
    radix = 1
    for key in layout_keys:
        combined += (key + 1) * radix
        radix *= int(key.max()) + 2
    group_codes, layouts = pd.factorize(combined)
    inverse = np.asarray(group_codes)
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(layouts)))[:-1]
    parts = [HEADER]
    for rows in np.split(order, bounds):
        first = rows[0]
        layout = [int(key[first]) for key in layout_keys]
        fields: list[tuple[str, str]] = [("count", ">i2")]
        for j, (_, pg_type) in enumerate(spec):
            fields.append((f"len{j}", ">i4"))
            if pg_type == "text":
                code = int(layout[j])
                texts = text_values[j]
                assert texts is not None
                if code >= 0 and texts[code]:
                    fields.append((f"val{j}", f"S{len(texts[code])}"))
            elif layout[j] == 0:
                fields.append((f"val{j}", _NUMPY[pg_type]))
        block = np.empty(len(rows), dtype=np.dtype(fields))
        block["count"] = len(spec)
        for j, (_, pg_type) in enumerate(spec):
            if pg_type == "text":
                code = int(layout[j])
                texts = text_values[j]
                assert texts is not None
                if code < 0:
                    block[f"len{j}"] = -1
                else:
                    block[f"len{j}"] = len(texts[code])
                    if texts[code]:
                        block[f"val{j}"] = texts[code]
            elif layout[j] == 1:
                block[f"len{j}"] = -1
            else:
                block[f"len{j}"] = _WIDTH[pg_type]
                column = values[j]
                assert column is not None
                block[f"val{j}"] = column[rows]
        parts.append(block.tobytes())
    parts.append(TRAILER)
    return b"".join(parts)


# Binary COPY's header is the signature, 32 bits of flags and the length of an extension area.
_HEADER_FIXED = len(HEADER) - 4


def decode_binary_copy(
    payload: bytes | bytearray, spec: Sequence[tuple[str, PgType]]
) -> dict[str, np.ndarray]:
    """Columns of a binary COPY payload whose fields are all fixed-width and non-NULL.

    Every row then has one layout, so one structured numpy view reads them all.
    """
    if any(pg_type == "text" for _, pg_type in spec):
        raise ValueError("text fields have no fixed width")
    if payload[: len(HEADER) - 8] != HEADER[: len(HEADER) - 8]:
        raise ValueError("not a binary COPY payload")
    start = len(HEADER) + int.from_bytes(payload[_HEADER_FIXED : len(HEADER)], "big")
    end = len(payload) - len(TRAILER)
    if payload[end:] != TRAILER:
        raise ValueError("binary COPY payload without its trailer")
    fields: list[tuple[str, str]] = [("count", ">i2")]
    for j, (_, pg_type) in enumerate(spec):
        fields += [(f"len{j}", ">i4"), (f"val{j}", _NUMPY[pg_type])]
    row = np.dtype(fields)
    rows = np.frombuffer(payload, dtype=row, count=(end - start) // row.itemsize, offset=start)
    bad = rows["count"] != len(spec)
    for j, (_, pg_type) in enumerate(spec):
        bad |= rows[f"len{j}"] != _WIDTH[pg_type]
    if bad.any() or (end - start) % row.itemsize:
        # The first row off the layout: say why (a NULL has no value bytes).
        first = int(np.argmax(bad)) if bad.any() else len(rows)
        at = start + first * row.itemsize + 2
        for name, _ in spec:
            length = int.from_bytes(payload[at : at + 4], "big", signed=True)
            if length == -1:
                raise ValueError(f"expected no NULLs, got one in {name}")
            at += 4 + max(length, 0)
        raise ValueError("binary COPY rows are not the fixed-width fields asked for")
    out: dict[str, np.ndarray] = {}
    for j, (name, pg_type) in enumerate(spec):
        values = rows[f"val{j}"]
        if pg_type == "date":
            out[name] = _PG_EPOCH + values.astype(np.int64).astype("timedelta64[D]")
        elif pg_type == "bool":
            out[name] = values.astype(bool)
        else:
            out[name] = values.astype(values.dtype.newbyteorder("="))
    return out
