"""Narrow facts, runs and results frames to what a query asks about.

One `Filters` value carries every filter a query accepts (time window, branch, job, label
values, marker, file glob); the REST API, the dashboard and the CLI build it from their inputs
and hand it to `filter_facts` / `filter_runs` / `filter_results`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from fnmatch import fnmatchcase

import numpy as np
import pandas as pd

from model.frames import label_values, labels_key

UNMARKED = "(unmarked)"
UNKNOWN_MARKERS = "(unknown)"


@dataclass(frozen=True)
class Filters:
    """What to keep. Empty fields keep everything; a window is inclusive on both days.

    `markers` keeps tests carrying any of the markers (`(unmarked)` selects tests known to have
    none); `exclude_markers` drops tests carrying any of them. Tests whose markers are unknown
    (JUnit data) match neither list: a marker filter drops them, an exclusion keeps them.
    `files` are fnmatch-style globs (`*` also crosses `/`).
    """

    since: date | None = None
    until: date | None = None
    branches: tuple[str, ...] = ()
    jobs: tuple[str, ...] = ()
    labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    markers: tuple[str, ...] = ()
    exclude_markers: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    @property
    def has_test_filters(self) -> bool:
        """True when a filter looks at tests (markers, files), which runs cannot answer."""
        return bool(self.markers or self.exclude_markers or self.files)

    @property
    def key(self) -> tuple[object, ...]:
        """A hashable value equal for equal filters (labels in any order): the cache key."""
        labels = tuple(sorted((k, tuple(v)) for k, v in self.labels.items()))
        return (
            self.since,
            self.until,
            self.branches,
            self.jobs,
            labels,
            self.markers,
            self.exclude_markers,
            self.files,
        )


def filter_facts(facts: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """The facts rows matching every filter (window by `day`, labels by `labels_key`)."""
    keep = _cell_mask(facts, filters, day=facts["day"], keys=facts["labels_key"])
    keep &= _test_mask(facts, filters)
    return facts.loc[keep]


def filter_runs(runs: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """The runs matching the run-level filters; marker and file filters do not apply to runs."""
    started = pd.to_datetime(runs["started_at"], utc=True, errors="coerce")
    day = started.dt.tz_convert(None).dt.normalize()
    keys = runs["labels_key"] if "labels_key" in runs else runs["labels"].map(labels_key)
    return runs.loc[_cell_mask(runs, filters, day=day, keys=keys)]


def filter_results(results: pd.DataFrame, runs: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """The results whose run matches the run-level filters and whose test matches the rest."""
    kept_runs = filter_runs(runs, filters)["run_id"]
    keep = results["run_id"].isin(kept_runs).to_numpy(dtype=bool) & _test_mask(results, filters)
    kept: pd.DataFrame = results.loc[keep]
    return kept


def _cell_mask(
    frame: pd.DataFrame, filters: Filters, *, day: pd.Series, keys: pd.Series
) -> np.ndarray:
    keep = np.ones(len(frame), dtype=bool)
    if filters.since is not None:
        keep &= (day >= pd.Timestamp(filters.since)).to_numpy(dtype=bool, na_value=False)
    if filters.until is not None:
        keep &= (day <= pd.Timestamp(filters.until)).to_numpy(dtype=bool, na_value=False)
    if filters.branches:
        keep &= frame["branch"].isin(filters.branches).to_numpy(dtype=bool)
    if filters.jobs:
        keep &= frame["job"].isin(filters.jobs).to_numpy(dtype=bool)
    for key, allowed in filters.labels.items():
        values = label_values(keys.astype(object), key)
        keep &= values.isin(allowed).to_numpy(dtype=bool)
    return keep


def _test_mask(frame: pd.DataFrame, filters: Filters) -> np.ndarray:
    keep = np.ones(len(frame), dtype=bool)
    if filters.markers:
        keep &= _has_any_marker(frame["markers"], filters.markers)
    if filters.exclude_markers:
        keep &= ~_has_any_marker(frame["markers"], filters.exclude_markers)
    if filters.files:
        keep &= _matches_any_glob(frame["file"], filters.files)
    return keep


def _has_any_marker(markers: pd.Series, wanted: tuple[str, ...]) -> np.ndarray:
    wanted_set = set(wanted)
    codes, sets = marker_sets(markers)
    decision = np.array(
        [
            s is not None and (bool(wanted_set & set(s)) or (not s and UNMARKED in wanted_set))
            for s in sets
        ]
        + [False],
        dtype=bool,
    )
    # code -1 (unknown markers) picks the trailing False.
    picked: np.ndarray = decision[codes]
    return picked


def marker_sets(markers: pd.Series) -> tuple[np.ndarray, list[tuple[str, ...] | None]]:
    """Factorize a markers column: per-row codes into distinct sorted marker tuples.

    Code -1 means unknown markers (None). Marker sets repeat across millions of rows, so
    decisions are made once per distinct set.
    """
    try:
        codes, uniques = pd.factorize(markers, use_na_sentinel=True)
    except TypeError:  # lists are unhashable: results frames carry lists, facts tuples
        codes, uniques = pd.factorize(markers.map(_marker_key), use_na_sentinel=True)
    sets = [_marker_key(u) for u in uniques]
    return np.asarray(codes, dtype=np.int64), sets


def _marker_key(value: object) -> tuple[str, ...] | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    assert isinstance(value, list | tuple | np.ndarray)
    return tuple(sorted(str(v) for v in value))


def _matches_any_glob(files: pd.Series, globs: tuple[str, ...]) -> np.ndarray:
    codes, uniques = pd.factorize(files, use_na_sentinel=True)
    decision = np.array(
        [isinstance(f, str) and any(fnmatchcase(f, g) for g in globs) for f in uniques] + [False],
        dtype=bool,
    )
    return decision[codes]
