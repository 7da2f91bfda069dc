"""PostgreSQL's binary format of a one-dimensional array of fixed-width numbers, from numpy.

A query parameter in this format carries a whole column (`unnest(%b, %b, ...)`) in one
statement, with no temporary table and no per-value Python object: each element is its length
and its big-endian bytes, so one structured numpy array is the payload. Floats keep NaN (SQL
reads it back as NULL with `nullif(x, 'NaN')`): a NULL element would have no value bytes.
"""

from __future__ import annotations

import struct
from typing import Literal

import numpy as np

ArrayType = Literal["int8", "int4", "float8", "float4"]

# Element type oid and the array type's oid, per element type.
ELEMENT_OID: dict[str, int] = {"int8": 20, "int4": 23, "float8": 701, "float4": 700}
ARRAY_OID: dict[str, int] = {"int8": 1016, "int4": 1007, "float8": 1022, "float4": 1021}
_NUMPY = {"int8": ">i8", "int4": ">i4", "float8": ">f8", "float4": ">f4"}


def encode_array(values: np.ndarray, pg_type: ArrayType) -> bytes:
    """The binary array of `values` (no NULL elements; floats may be NaN)."""
    n = len(values)
    if n == 0:
        # No dimensions: PostgreSQL's empty array.
        return struct.pack(">iiI", 0, 0, ELEMENT_OID[pg_type])
    header = struct.pack(">iiIii", 1, 0, ELEMENT_OID[pg_type], n, 1)
    block = np.empty(n, dtype=[("len", ">i4"), ("val", _NUMPY[pg_type])])
    block["len"] = block.dtype["val"].itemsize
    block["val"] = values
    return header + block.tobytes()
