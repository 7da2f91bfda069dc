"""Apache Otava's change points for many series; run by bench_changes with Otava's own python.

Otava pins numpy and scipy versions of its own, so it lives in its own venv and this script is
the only code that runs there: it imports nothing of laptime.

    OTAVA_PYTHON bench/otava_changes.py IN.npz OUT.json P1 [P2 ...]

IN.npz holds `values` (all series concatenated) and `offsets` (series i is
values[offsets[i]:offsets[i+1]]); OUT.json maps each max p-value to, per series, the indexes
of the first run after each change point, and the seconds Otava took.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from otava.analysis import compute_change_points

WINDOW = 50  # Otava's default window_len


def main() -> None:
    """Read the series, run Otava at each p-value, write the change points."""
    src, out, *pvalues = sys.argv[1:]
    data = np.load(src)
    values, offsets = data["values"], data["offsets"]
    answer: dict[str, object] = {}
    for text in pvalues:
        p = float(text)
        started = time.perf_counter()
        found = []
        for i in range(len(offsets) - 1):
            series = [float(v) for v in values[offsets[i] : offsets[i + 1]]]
            points, _ = compute_change_points(series, window_len=WINDOW, max_pvalue=p)
            found.append([int(cp.index) for cp in points])
        answer[text] = {"changes": found, "seconds": time.perf_counter() - started}
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(answer, handle)


if __name__ == "__main__":
    main()
