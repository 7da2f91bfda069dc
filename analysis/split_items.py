"""The units a split moves between jobs: whole files, `file::Class` or single tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.split_options import Granularity


def item_keys(estimates: pd.DataFrame, granularity: Granularity, max_item_s: float) -> pd.Series:
    """The unit each test moves with (nodeid -> file, `file::Class` or nodeid).

    `file`/`marker` keep files whole, `test` moves tests, `auto` keeps a file whole unless it
    weighs more than `max_item_s` (a job's fair share, or the budget), then splits it by class,
    a class still too heavy by function, and a function still too heavy by test.
    """
    catalog = ItemCatalog(estimates)
    return pd.Series(catalog.keys(granularity, max_item_s), index=estimates.index)


class ItemCatalog:
    """Integer codes for every test's file and class, computed once per plan."""

    def __init__(self, estimates: pd.DataFrame) -> None:
        self.nodeids = estimates.index.astype(str).to_numpy(dtype=object)
        self.weights = estimates["duration_s"].to_numpy(dtype=np.float64)
        self.files = estimates["file"].astype(str).to_numpy(dtype=object)
        file_codes, _ = pd.factorize(self.files)
        self.file_s = np.bincount(file_codes, weights=self.weights)[file_codes]
        self._cache: dict[object, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def _masks(self, max_item_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Heavy-file rows and the key each of them moves with: its class where the class
        fits, else its function (every parametrization: ids can differ between processes),
        else the test itself."""
        heavy = np.flatnonzero(self.file_s > max_item_s)
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

    def keys(self, granularity: Granularity, max_item_s: float) -> np.ndarray:
        """Item label per test (see item_keys)."""
        if granularity == "test":
            return self.nodeids
        if granularity in ("file", "marker"):
            return self.files
        heavy, heavy_keys = self._masks(max_item_s)
        keys = self.files.copy()
        keys[heavy] = heavy_keys
        return keys

    def items(
        self, granularity: Granularity, max_item_s: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(names sorted, weight_s, n_tests) of the items; the same cut is computed once."""
        signature: object = granularity
        if granularity == "auto":
            heavy, heavy_keys = self._masks(max_item_s)
            signature = (heavy.tobytes(), tuple(heavy_keys.tolist()))
        if signature not in self._cache:
            # Sorted names: the partition breaks ties by position, so this fixes the result.
            codes, names = pd.factorize(self.keys(granularity, max_item_s), sort=True)
            weights = np.bincount(codes, weights=self.weights, minlength=len(names))
            counts = np.bincount(codes, minlength=len(names))
            self._cache[signature] = (np.asarray(names, dtype=object), weights, counts)
        return self._cache[signature]


def _group_sums(groups: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each row's group total."""
    codes, _ = pd.factorize(groups)
    return np.bincount(codes, weights=weights)[codes]
