"""Run labels written as `key=value`: the one parser the client, the API and the filters share."""

from __future__ import annotations

from collections.abc import Iterable


def split_label(pair: str) -> tuple[str, str]:
    """`key=value` -> (key, value), split on the first `=` only; both kept exactly as written.

    Values may hold anything printable, `=` and commas included; raises ValueError when there
    is no `=` or the key is empty.
    """
    key, sep, value = pair.partition("=")
    if not sep or not key:
        raise ValueError(f"label {pair!r} is not key=value")
    return key, value


def parse_labels(pairs: Iterable[str]) -> dict[str, str]:
    """`k=v` strings to a dict (a repeated key keeps its last value).

    Raises ValueError naming the first malformed pair.
    """
    return dict(split_label(pair) for pair in pairs)
