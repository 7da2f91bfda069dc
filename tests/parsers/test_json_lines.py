"""The vectorised JSON Lines encoding of `laptime parse` equals json.dumps row by row."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from app.cli.parse_cmd import OUTPUT_KEYS, json_lines
from ingest.model import results_frame


def reference(frame: pd.DataFrame) -> list[str]:
    """What json.dumps prints per row, unknowns (None, NaN) as null."""

    def plain(value: Any) -> Any:
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return None
        return value.item() if hasattr(value, "item") else value

    return [
        json.dumps({key: plain(frame[key].iloc[i]) for key in OUTPUT_KEYS})
        for i in range(len(frame))
    ]


def test_every_kind_of_value_encodes_as_json_dumps_would() -> None:
    frame = results_frame(
        {
            "nodeid": ['a.py::t[x"y]', "b::é ünïcode \u2028", "c\\d\n\t", ""],
            "file": ["a.py", None, "a.py", None],
            "classname": [None, "K", "K", None],
            "function": ["t", "f", "g", ""],
            "params": ['x"y', None, None, None],
            "outcome": ["passed", "failed", "skipped", "error"],
            "duration_s": [0.1, np.nan, 1e-07, 123456789.5],
            "setup_s": [np.nan, 0.25, np.nan, 3.0],
            "attempts": [1, 3, 1, 2],
            "flaky": [False, True, False, False],
            "suite": ["s", None, "s", "<script>"],
            "message": [None, "boom\x00\x1f", None, "a" * 500],
        }
    )
    out = json_lines(frame)
    assert out == reference(frame)
    assert [json.loads(line)["duration_s"] for line in out] == [0.1, None, 1e-07, 123456789.5]


def test_empty_frame_prints_nothing() -> None:
    assert json_lines(results_frame({"nodeid": []})) == []


def test_columns_with_one_value_for_every_row_are_folded_safely() -> None:
    # One suite, no phases, one outcome: folded into the row template; braces must survive.
    frame = results_frame(
        {
            "nodeid": ["{0}::t", "{}::u", "}{::v"],
            "outcome": ["passed"] * 3,
            "duration_s": [0.5, 0.5, 0.5],
            "suite": ["{suite} {0}"] * 3,
            "message": [None, None, "{!r}"],
            "flaky": [True] * 3,
        }
    )
    assert json_lines(frame) == reference(frame)
