"""numpy columns as binary array parameters of psycopg statements (pgcodec encodes them).

`Int8Array(ids)` passed as `%(ids)b` arrives as one bigint[]; `unnest` of several such
parameters is a whole staged table in one statement.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

from pgcodec.binary_array import ARRAY_OID, ArrayType, encode_array


class NumericArray:
    """A numpy column to send as a binary array of `pg_type`."""

    pg_type: ClassVar[ArrayType]

    def __init__(self, values: Any) -> None:
        self.values = np.asarray(values)


class Int8Array(NumericArray):
    """bigint[]"""

    pg_type = "int8"


class Int4Array(NumericArray):
    """integer[]"""

    pg_type = "int4"


class Float8Array(NumericArray):
    """double precision[] (NaN where unknown)"""

    pg_type = "float8"


class Float4Array(NumericArray):
    """real[] (NaN where unknown)"""

    pg_type = "float4"


def _dumper(kind: type[NumericArray]) -> type[Dumper]:
    class ArrayDumper(Dumper):
        format = Format.BINARY
        oid = ARRAY_OID[kind.pg_type]

        def dump(self, obj: NumericArray) -> bytes:
            return encode_array(obj.values, obj.pg_type)

    return ArrayDumper


for _kind in (Int8Array, Int4Array, Float8Array, Float4Array):
    # Only these wrapper types are adapted: no other value changes how it is sent.
    psycopg.adapters.register_dumper(_kind, _dumper(_kind))
