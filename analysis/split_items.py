"""The units a split moves between jobs: whole files, `file::Class` or single tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.split_options import Granularity


def item_keys(estimates: pd.DataFrame, granularity: Granularity, max_item_s: float) -> pd.Series:
    """The unit each test moves with (nodeid -> file, `file::Class` or nodeid).

    `file`/`marker` keep files whole, `test` moves tests, `auto` keeps a file whole unless it
    weighs more than `max_item_s` (a job's fair share, or the budget), then splits it by class,
    and a class still too heavy by test.
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

    def _masks(self, max_item_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Heavy-file rows, rows moving by class, and the class key of each heavy row."""
        heavy = np.flatnonzero(self.file_s > max_item_s)
        # Only tests of heavy files need a class key; those are few, so this stays cheap.
        parts = [nodeid.split("::") for nodeid in self.nodeids[heavy].tolist()]
        has_class = np.array([len(p) >= 3 for p in parts], dtype=bool)
        classes = np.array(
            [
                f"{p[0]}::{p[1]}" if len(p) >= 3 else n
                for p, n in zip(parts, self.nodeids[heavy], strict=True)
            ],
            dtype=object,
        )
        class_codes, _ = pd.factorize(classes)
        class_s = np.bincount(class_codes, weights=self.weights[heavy])[class_codes]
        by_class = has_class & (class_s <= max_item_s)
        return heavy, by_class, classes

    def keys(self, granularity: Granularity, max_item_s: float) -> np.ndarray:
        """Item label per test (see item_keys)."""
        if granularity == "test":
            return self.nodeids
        if granularity in ("file", "marker"):
            return self.files
        heavy, by_class, classes = self._masks(max_item_s)
        keys = self.files.copy()
        keys[heavy] = np.where(by_class, classes, self.nodeids[heavy])
        return keys

    def items(
        self, granularity: Granularity, max_item_s: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(names sorted, weight_s, n_tests) of the items; the same cut is computed once."""
        signature: object = granularity
        if granularity == "auto":
            heavy, by_class, _ = self._masks(max_item_s)
            signature = (heavy.tobytes(), by_class.tobytes())
        if signature not in self._cache:
            # Sorted names: the partition breaks ties by position, so this fixes the result.
            codes, names = pd.factorize(self.keys(granularity, max_item_s), sort=True)
            weights = np.bincount(codes, weights=self.weights, minlength=len(names))
            counts = np.bincount(codes, minlength=len(names))
            self._cache[signature] = (np.asarray(names, dtype=object), weights, counts)
        return self._cache[signature]
