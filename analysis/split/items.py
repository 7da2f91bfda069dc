"""The units a split moves between jobs: whole files, `file::Class` or single tests."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from analysis.split.options import Granularity


class Items(NamedTuple):
    """The units of one cut, sorted by name."""

    names: np.ndarray
    weights: np.ndarray  # test seconds + the file cost the item carries: what is partitioned
    counts: np.ndarray  # tests per item
    files: np.ndarray  # file code per item (ItemCatalog.file_names)
    test_s: np.ndarray  # test seconds alone
    codes: np.ndarray  # item position of every test (in the catalog's test order)


def item_keys(estimates: pd.DataFrame, granularity: Granularity, max_item_s: float) -> pd.Series:
    """The unit each test moves with (nodeid -> file, `file::Class` or nodeid).

    `file`/`marker` keep files whole, `test` moves tests, `auto` keeps a file whole unless it
    weighs more than `max_item_s` (a job's fair share, or the budget), then splits it by class,
    a class still too heavy by function, and a function still too heavy by test.
    """
    catalog = ItemCatalog(estimates)
    return pd.Series(catalog.keys(granularity, max_item_s), index=estimates.index)


class ItemCatalog:
    """Integer codes for every test's file and class, computed once per plan.

    `file_cost_s` (file -> seconds) is what each further job touching a file pays again, its
    first use and collection (analysis/split/job_model.py), in test seconds (x workers). Items
    carry it in their weight, and `auto` splits a heavy file only when that pays (`_pays`).
    """

    def __init__(
        self,
        estimates: pd.DataFrame,
        file_cost_s: pd.Series | None = None,
    ) -> None:
        self.nodeids = estimates.index.astype(str).to_numpy(dtype=object)
        self.weights = estimates["duration_s"].to_numpy(dtype=np.float64)
        self.files = estimates["file"].astype(str).to_numpy(dtype=object)
        self.file_codes, file_names = pd.factorize(self.files)
        self.file_labels = np.asarray(file_names, dtype=object)
        self.file_s = np.bincount(self.file_codes, weights=self.weights)[self.file_codes]
        costs = (
            np.zeros(len(file_names))
            if file_cost_s is None
            else pd.Series(file_cost_s, dtype="float64")
            .reindex(pd.Index(file_names))
            .fillna(0.0)
            .to_numpy(dtype=np.float64)
        )
        self.file_cost = costs  # per file code
        self.cost = costs[self.file_codes]  # per test
        self._cache: dict[object, Items] = {}

    @property
    def total_s(self) -> float:
        """Every test once plus every file's cost once: the work of any layout, at least."""
        return float(self.weights.sum() + self.file_cost.sum())

    def _pays(self, max_item_s: float, forced_s: float, jobs: int) -> np.ndarray:
        """Per test: its file is heavier than `max_item_s` and splitting it pays.

        Cut into m = ceil(T / max_item_s) pieces, a file of test time T and cost c stops
        setting a wait of T + c: the wait becomes about max(T / m + c, max_item_s + (m-1)c /
        jobs), and the machine pays (m-1)c more. It pays when the wait saved exceeds that.
        A file that could never fit `forced_s` (the budget) is split regardless."""
        over = self.file_s > max_item_s
        if not self.cost.any():
            return over
        with np.errstate(divide="ignore", invalid="ignore"):
            pieces = np.maximum(np.ceil(self.file_s / max(max_item_s, 1e-12)), 2.0)
        extra = (pieces - 1.0) * self.cost
        after = np.maximum(self.file_s / pieces + self.cost, max_item_s + extra / max(jobs, 1))
        saved = self.file_s + self.cost - after
        return over & ((saved > extra) | (self.file_s + self.cost > forced_s))

    def _masks(
        self, max_item_s: float, forced_s: float = np.inf, jobs: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """Heavy-file rows (heavier than `max_item_s` and worth splitting) and the key each of
        them moves with: its class where the class fits, else its function (every
        parametrization: ids can differ between processes), else the test itself."""
        heavy = np.flatnonzero(self._pays(max_item_s, forced_s, jobs))
        # Only tests of heavy files need these keys; those are few, so this stays cheap.
        nodeids = self.nodeids[heavy].tolist()
        parts = [nodeid.split("::") for nodeid in nodeids]
        has_class = np.array([len(p) >= 3 for p in parts], dtype=bool)
        classes = np.array(
            [f"{p[0]}::{p[1]}" if len(p) >= 3 else n for p, n in zip(parts, nodeids, strict=True)],
            dtype=object,
        )
        functions = np.array([n.partition("[")[0] for n in nodeids], dtype=object)
        weights = self.weights[heavy]
        fits_class = has_class & (_group_sums(classes, weights) <= max_item_s)
        fits_function = _group_sums(functions, weights) <= max_item_s
        keys = np.where(fits_class, classes, np.where(fits_function, functions, nodeids))
        return heavy, keys.astype(object)

    def keys(
        self,
        granularity: Granularity,
        max_item_s: float,
        forced_s: float = np.inf,
        jobs: int = 1,
    ) -> np.ndarray:
        """Item label per test (see item_keys)."""
        if granularity == "test":
            return self.nodeids
        if granularity in ("file", "marker"):
            return self.files
        heavy, heavy_keys = self._masks(max_item_s, forced_s, jobs)
        keys = self.files.copy()
        keys[heavy] = heavy_keys
        return keys

    def items(
        self,
        granularity: Granularity,
        max_item_s: float,
        forced_s: float = np.inf,
        jobs: int = 1,
    ) -> Items:
        """The items of a cut (names sorted); each cut is computed once.

        An item's weight is its tests plus its file's cost x min(pieces, jobs) / pieces: a
        file in n pieces is touched by at most min(n, jobs) jobs, each paying the cost."""
        jobs = max(jobs, 1)
        signature: object = granularity
        if granularity == "auto":
            heavy, heavy_keys = self._masks(max_item_s, forced_s, jobs)
            signature = (heavy.tobytes(), tuple(heavy_keys.tolist()))
        if signature not in self._cache:
            # Sorted names: the partition breaks ties by position, so this fixes the result.
            keys = self.keys(granularity, max_item_s, forced_s, jobs)
            codes, names = pd.factorize(keys, sort=True)
            test_s = np.bincount(codes, weights=self.weights, minlength=len(names))
            counts = np.bincount(codes, minlength=len(names))
            item_file = np.zeros(len(names), dtype=np.int64)
            item_file[codes] = self.file_codes
            named = np.asarray(names, dtype=object)
            self._cache[signature] = Items(named, test_s, counts, item_file, test_s, codes)
        cut = self._cache[signature]
        if not self.file_cost.any():
            return cut
        # Only the cost spread depends on the job count: cheap, so not cached.
        pieces = np.bincount(cut.files, minlength=len(self.file_cost))[cut.files]
        share = np.minimum(pieces, jobs) / np.maximum(pieces, 1)
        return cut._replace(weights=cut.test_s + self.file_cost[cut.files] * share)

    def file_names(self, codes: np.ndarray) -> list[str]:
        """The file names of file codes (as `items` returns them)."""
        return [str(name) for name in self.file_labels[codes].tolist()]


def _group_sums(groups: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each row's group total."""
    codes, _ = pd.factorize(groups)
    return np.bincount(codes, weights=weights)[codes]
