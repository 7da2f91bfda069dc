"""A batch's results COPY frame and per-file sums, built once over its runs end to end
(ingest.store_batch), against each run's own result_frame and file_fact_sums concatenated."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
import pytest

from ingest.store import (
    PreparedRun,
    compute_test_ids,
    file_fact_sums,
    result_frame,
    storable_results,
)
from ingest.store_batch import batch_file_sums, batch_result_frame, batch_results
from ingest.upload_ingest import merged_upload
from tests.server.test_ingest_batch import BATCH


def prepared(i: int, body: bytes, day: date) -> PreparedRun:
    merged = merged_upload([("r.xml" if body.startswith(b"<") else "r.json", body)], None, None)
    assert merged is not None
    results, warnings = storable_results(merged.results)
    return PreparedRun(
        run_id=100 + i,
        project_id=7,
        day=day,
        cell_id=40 + i % 2,
        branch=None,
        results=results,
        ids=compute_test_ids(7, results["nodeid"]),
        warnings=warnings,
        measures={},
    )


def as_copied(frame: pd.DataFrame) -> pd.DataFrame:
    """The values as the COPY sees them: every missing value None."""
    return frame.astype(object).where(frame.notna(), None)


def runs_of(days: list[date]) -> list[PreparedRun]:
    """Runs of the batch fixture's reports (plugin JSON and JUnit: unknown durations, phases
    only some rows report, files missing in JUnit), on the days given."""
    return [prepared(i, body, days[i % len(days)]) for i, (_, _, body) in enumerate(BATCH)]


@pytest.mark.parametrize(
    "days", [[date(2020, 3, 2)], [date(2020, 3, 2), date(2020, 3, 9), date(2021, 1, 1)]]
)
@pytest.mark.parametrize("count", [1, 2, len(BATCH)])
def test_a_batch_builds_what_its_runs_build_one_by_one(days: list[date], count: int) -> None:
    runs = runs_of(days)[:count]
    results = batch_results(runs)
    want = pd.concat(
        [result_frame(7, r.day, r.run_id, r.results, r.ids) for r in runs], ignore_index=True
    )
    # A text column may come out str (missing: NaN) where the runs' concatenation was object
    # (None): the COPY writes any missing value as NULL (pgcodec.binary_copy, _copy_rows).
    pd.testing.assert_frame_equal(
        as_copied(batch_result_frame(7, runs, results)), as_copied(want), check_dtype=False
    )
    sums = batch_file_sums(runs, results)
    each = pd.concat(
        [file_fact_sums(r.results).assign(run=i) for i, r in enumerate(runs)], ignore_index=True
    )
    pd.testing.assert_frame_equal(
        sums.reset_index(drop=True), each[sums.columns], check_dtype=False
    )
    assert np.array_equal(sums["run"].to_numpy(), each["run"].to_numpy())
