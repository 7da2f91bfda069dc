"""Make report strings storable as PostgreSQL text, and bound the ones that get indexed.

PostgreSQL text cannot hold NUL, and UTF-8 cannot encode the lone surrogates Python keeps
from undecodable input: both become U+FFFD. Everything else (empty strings, backslashes, tabs,
newlines) is stored as given. A btree entry must fit a third of a page (~2700 bytes), so names
that are indexed are cut at MAX_NAME_BYTES with a hash of the whole name, which keeps two long
names that share a prefix distinct.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

REPLACEMENT = "\ufffd"
# Bytes of UTF-8 a stored name keeps at most (docs/errors.md, "Warnings").
MAX_NAME_BYTES = 2000
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# "~" and 16 hex digits of SHA-256 of the full name end every cut name.
_SUFFIX_BYTES = 17


def storable_text(value: str) -> str:
    """`value` with NUL and lone surrogates replaced by U+FFFD."""
    return _UNSTORABLE.sub(REPLACEMENT, value)


def storable_column(values: pd.Series) -> pd.Series:
    """storable_text over a column of str/None; returns the same object when nothing changes."""
    if not _holds_text(values):
        return values
    # One scan of the joined column finds the (rare) columns that need work.
    if not _has_unstorable(joined_text(values)):
        return values
    return values.map(lambda v: storable_text(v) if isinstance(v, str) else v)


def _has_unstorable(text: str) -> bool:
    """Whether `text` holds NUL or a surrogate: UTF-8 cannot encode a surrogate, and encoding
    and a NUL search run at memory speed where a regex runs per character."""
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def joined_text(values: pd.Series | Sequence[Any], sep: str = "") -> str:
    """The strings of a column or sequence joined by `sep`, in order, its missing or other
    values left out."""
    items = values.tolist() if isinstance(values, pd.Series) else values
    try:
        # Most name columns hold only strings: one join in C, no test per value.
        return sep.join(items)
    except TypeError:
        return sep.join([v for v in items if isinstance(v, str)])


def longest_text(values: pd.Series | Sequence[Any]) -> int:
    """Characters of the longest string of a column or sequence (0 when it has none); an
    upper bound when it holds other sized values."""
    items = values.tolist() if isinstance(values, pd.Series) else values
    try:
        return max(map(len, items), default=0)
    except TypeError:
        return max((len(v) for v in items if isinstance(v, str)), default=0)


def _holds_text(values: pd.Series) -> bool:
    # Parsers hand over object columns or pandas' string dtype, depending on the column.
    return values.dtype == object or pd.api.types.is_string_dtype(values.dtype)


def cut_name(value: str, max_bytes: int = MAX_NAME_BYTES) -> str:
    """`value` if it fits max_bytes of UTF-8, else its longest prefix that leaves room for
    "~" and 16 hex digits of its SHA-256."""
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return value
    digest = hashlib.sha256(raw).hexdigest()[:16]
    head = raw[: max_bytes - _SUFFIX_BYTES].decode("utf-8", "ignore")
    return f"{head}~{digest}"


def cut_names(values: pd.Series, max_bytes: int = MAX_NAME_BYTES) -> tuple[pd.Series, int]:
    """cut_name over a column of str/None: (column, how many values were cut)."""
    if values.empty or not _holds_text(values):
        return values, 0
    # A character is at most 4 bytes: only longer strings can be over the limit. The longest
    # string decides first, in C, whether any row needs a look at all.
    if longest_text(values) <= max_bytes // 4:
        return values, 0
    lengths = values.str.len().to_numpy(dtype=np.float64, na_value=0.0)
    candidates = np.flatnonzero(lengths > max_bytes // 4)
    cut = values.copy()
    changed = 0
    for at in candidates.tolist():
        original = str(values.iat[at])
        shorter = cut_name(original, max_bytes)
        if shorter != original:
            cut.iat[at] = shorter
            changed += 1
    return cut, changed
