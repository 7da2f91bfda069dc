"""Which test cases an ingest sends to the dictionary: new ones, and known ones whose markers
or parametrize values changed (ingest.store.dictionary_rows with its KnownTests memo)."""

from __future__ import annotations

from typing import Any

from ingest.model import results_frame
from ingest.store import KnownTests, compute_test_ids, dictionary_rows


def _rows(memo: KnownTests, markers: list[Any], values: list[Any] | None = None) -> list[str]:
    n = len(markers)
    frame = results_frame(
        {
            "nodeid": [f"m.py::t{i}" for i in range(n)],
            "markers": markers,
            "param_values": values or [None] * n,
        }
    )
    ids = compute_test_ids(7, frame["nodeid"])
    return list(dictionary_rows(7, frame, ids, memo)["nodeid"])


def test_only_new_tests_and_changed_markers_or_values_are_sent() -> None:
    memo = KnownTests()
    assert _rows(memo, [None] * 4) == [f"m.py::t{i}" for i in range(4)]
    assert _rows(memo, [None] * 4) == []
    # Markers on one row (a report with markers takes the rendering path): only it changed.
    assert _rows(memo, [["slow"], None, None, None]) == ["m.py::t0"]
    assert _rows(memo, [["slow"], None, None, None]) == []
    assert _rows(memo, [["slow", "gpu"], None, None, None]) == ["m.py::t0"]
    # Its markers gone again (a report with none at all): sent again, the others not.
    assert _rows(memo, [None] * 4) == ["m.py::t0"]
    assert _rows(memo, [None, None, None, None, None]) == ["m.py::t4"]
    assert _rows(memo, [None] * 4, [None, {"x": 1}, None, None]) == ["m.py::t1"]
