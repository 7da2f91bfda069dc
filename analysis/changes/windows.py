"""The scan at the heart of change detection: many windows judged at once, in numpy.

Each row of the input is one window of a series (log durations, right-aligned, NaN on the
left where the window is shorter than the array). For every split of every row the two-sample
Mann-Whitney statistic (midranks, tie-corrected variance) is computed from one sort and a
suffix sum of ranks, so a row costs O(W log W) and all rows one vectorised pass. The best
split of a row is a change when its rank statistic, its move in medians against the window's
own noise and its size in seconds all pass the settings' thresholds.

Ranks make the scan blind to the shape of the noise (skewed, heavy-tailed, bimodal, quantised
timings) and to single outliers; medians and a quartile-based noise keep the size honest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.changes.settings import DetectionSettings

IQR_SIGMA = 1.349  # interquartile range of a normal distribution, in sigmas
REFINE_RUNS = 6  # how far from the rank statistic's peak a change may be placed


@dataclass(frozen=True)
class WindowVerdicts:
    """Per row: whether it holds a change, where (column of the first run after), and why."""

    fired: np.ndarray  # bool (R,)
    split: np.ndarray  # int (R,), column of the first run after the best split; -1 if none
    z: np.ndarray  # float (R,), signed rank statistic at the split (+: slower after)
    level: np.ndarray  # float (R, W), log durations with machine speeds taken out


def judge_windows(
    logs: np.ndarray,
    machines: np.ndarray | None,
    settings: DetectionSettings,
    *,
    ranked: tuple[np.ndarray, np.ndarray] | None = None,
) -> WindowVerdicts:
    """Judge every row of `logs` (R, W); `machines` (R, W) holds codes (-1: unknown) or None.
    `ranked`: the rows' midranks and tie sums as `midranks(logs, valid)` gives them, kept by
    the caller (only without machines, whose speeds would move the levels ranked)."""
    if ranked is not None and machines is not None:
        raise ValueError("ranks kept for logs do not hold for levels without machine speeds")
    rows, width = logs.shape
    valid = ~np.isnan(logs)
    count = valid.sum(axis=1)
    level = (
        _without_machine_speeds(logs, machines, valid, settings) if machines is not None else logs
    )
    n_after = width - np.arange(width)[None, :]
    if ranked is None:
        z_all = _rank_scan(level, valid, count)
        placeable = _placeable(valid, count, settings)
        score = np.where(placeable & (n_after >= settings.min_after), np.abs(z_all), -1.0)
    else:
        # Kept ranks come from a table, whose windows are right-aligned without holes.
        z_all, score = _ranked_scores(*ranked, count, settings)
        placeable = None  # wanted for the rows that fire only
    split = score.argmax(axis=1)
    best = score[np.arange(rows), split]
    z = z_all[np.arange(rows), split]
    candidate = best >= settings.min_z
    fired = np.zeros(rows, dtype=bool)
    if candidate.any():
        idx = np.flatnonzero(candidate)
        fired[idx] = _large_enough(level[idx], valid[idx], split[idx], settings)
        for i in np.flatnonzero(fired):
            where = (
                placeable[i]
                if placeable is not None
                else _placeable(valid[i : i + 1], count[i : i + 1], settings)[0]
            )
            placed = _refine(level[i], where, int(split[i]))
            if n_after[0, placed] < settings.min_after:
                fired[i] = False  # the step fits best among the newest runs: wait for more
                continue
            split[i] = placed
            z[i] = z_all[i, placed]
    split = np.where(best >= 0, split, -1)
    return WindowVerdicts(fired=fired, split=split, z=np.where(best >= 0, z, 0.0), level=level)


def _placeable(valid: np.ndarray, count: np.ndarray, settings: DetectionSettings) -> np.ndarray:
    """Where a step may be placed: runs of the window with min_before runs before them."""
    width = valid.shape[1]
    cols = np.arange(width)[None, :]
    placeable: np.ndarray = valid & (cols - (width - count)[:, None] >= settings.min_before)
    placeable &= width - cols >= 1
    return placeable


def split_sizes(
    level: np.ndarray, valid: np.ndarray, split: np.ndarray, settings: DetectionSettings
) -> dict[str, np.ndarray]:
    """Medians before and after each row's split, the pooled noise and the move in sigmas."""
    width = level.shape[1]
    after = valid & (np.arange(width)[None, :] >= split[:, None])
    before = valid & ~after
    med_b = masked_quantile(level, before, 0.5)
    med_a = masked_quantile(level, after, 0.5)
    residual = level - np.where(after, med_a[:, None], med_b[:, None])
    spread = masked_quantile(residual, valid, 0.75) - masked_quantile(residual, valid, 0.25)
    noise = np.maximum(spread / IQR_SIGMA, settings.min_noise)
    delta = med_a - med_b
    return {"before": med_b, "after": med_a, "noise": noise, "sigmas": delta / noise}


def _refine(level: np.ndarray, placeable: np.ndarray, split: int) -> int:
    """The split near the rank statistic's best that fits two flat segments best.

    Standardised rank statistics are flat near their peak when the step is only a few runs
    from the window's end; the sum of absolute deviations from each side's median is not,
    and ignores outliers as the ranks do. Splits from REFINE_RUNS before the peak to the newest
    run are considered (an older step in the window cannot pull the answer back), those with
    fewer than min_after runs after them too: when one of them fits best, the step is still
    arriving (a large step's first runs lend a split before it a high rank statistic)."""
    width = len(level)
    near = np.arange(max(split - REFINE_RUNS, 0), width)
    near = near[placeable[near]]
    if len(near) <= 1:
        return split
    cols = np.arange(width)[None, :]
    valid = ~np.isnan(level)[None, :]
    after = valid & (cols >= near[:, None])
    before = valid & ~after
    values = np.broadcast_to(level, (len(near), width))
    med_b = masked_quantile(values, before, 0.5)[:, None]
    med_a = masked_quantile(values, after, 0.5)[:, None]
    centre = np.where(after, med_a, med_b)
    cost = np.where(valid, np.abs(values - centre), 0.0)
    return int(near[np.argmin(cost.sum(axis=1))])


def _large_enough(
    level: np.ndarray, valid: np.ndarray, split: np.ndarray, settings: DetectionSettings
) -> np.ndarray:
    sizes = split_sizes(level, valid, split, settings)
    before_s = np.exp(sizes["before"])
    after_s = np.exp(sizes["after"])
    large: np.ndarray = (
        (np.abs(sizes["sigmas"]) >= settings.min_sigmas)
        & (np.abs(after_s / before_s - 1.0) >= settings.min_relative)
        & (np.abs(after_s - before_s) >= settings.min_abs_s)
    )
    return large


def _ranked_scores(
    ranks: np.ndarray, tie_sum: np.ndarray, count: np.ndarray, settings: DetectionSettings
) -> tuple[np.ndarray, np.ndarray]:
    """`_rank_scan`'s statistic and judge_windows' score (|z| where a step may be named, -1
    elsewhere) for right-aligned windows whose midranks are known.

    The same arithmetic as `_rank_scan` in the same order, so the same numbers; rows of one
    length (all full windows, mostly) share their per-split terms, computed once, and the
    work is done in place: a third of the passes over the (R, W) arrays."""
    rows, width = ranks.shape
    suffix = np.cumsum(ranks, axis=1)
    np.subtract(ranks.sum(axis=1, keepdims=True), suffix, out=suffix)
    suffix += ranks
    cols = np.arange(width)[None, :]
    n_after = (width - cols).astype(float)
    score = np.empty((rows, width))
    for n in np.unique(count):
        sel: slice | np.ndarray = (
            slice(None) if n == count[0] and (count == n).all() else (np.flatnonzero(count == n))
        )
        nf = float(n)
        n_before = nf - n_after
        expected = n_after * (nf + 1.0) / 2.0
        z = suffix[sel]
        z -= expected
        with np.errstate(invalid="ignore", divide="ignore"):
            tie_term = tie_sum[sel][:, None] / (nf * (nf - 1.0))
            var = n_before * n_after / 12.0 * ((nf + 1.0) - tie_term)
            usable = var > 0
            np.sqrt(var, out=var)
            z /= var
        usable &= (cols >= width - n) & (n_before > 0)
        z[~usable] = 0.0
        suffix[sel] = z
        allowed = (cols - (width - n) >= settings.min_before) & (width - cols >= 1)
        allowed &= (cols >= width - n) & (width - cols >= settings.min_after)
        score[sel] = np.where(allowed, np.abs(z), -1.0)
    return suffix, score


def _rank_scan(level: np.ndarray, valid: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Standardised Mann-Whitney statistic of the runs from each column on vs those before."""
    ranks, tie_sum = midranks(level, valid)
    n = count[:, None].astype(float)
    # Suffix sums: S[c] = sum of ranks in columns c..W-1 (padding ranks are 0).
    suffix = ranks.sum(axis=1, keepdims=True) - np.cumsum(ranks, axis=1) + ranks
    width = level.shape[1]
    n_after = (width - np.arange(width))[None, :].astype(float)
    n_before = n - n_after
    expected = n_after * (n + 1.0) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        tie_term = tie_sum[:, None] / (n * (n - 1.0))
        var = n_before * n_after / 12.0 * ((n + 1.0) - tie_term)
        z = (suffix - expected) / np.sqrt(var)
    return np.where((var > 0) & valid & (n_before > 0), z, 0.0)


def midranks(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: average ranks (1-based) of the valid values, 0 elsewhere; and sum(t^3 - t)."""
    rows, width = values.shape
    filled = np.where(valid, values, np.inf)
    order = np.argsort(filled, axis=1)
    ordered = np.take_along_axis(filled, order, axis=1)
    cols = np.arange(width)
    in_data = cols[None, :] < valid.sum(axis=1)[:, None]
    mid = np.where(in_data, cols[None, :] + 1.0, 0.0)
    tie_sum = np.zeros(rows)
    tied = in_data[:, 1:] & (ordered[:, 1:] == ordered[:, :-1])
    with_ties = np.flatnonzero(tied.any(axis=1))
    if len(with_ties):
        # Only rows holding equal timings (a coarse timer) pay for the tie groups.
        mid[with_ties], tie_sum[with_ties] = _tie_groups(tied[with_ties], in_data[with_ties])
    ranks = np.zeros((rows, width))
    np.put_along_axis(ranks, order, mid, axis=1)
    return ranks, tie_sum


def _tie_groups(tied: np.ndarray, in_data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Midranks by sorted position and sum(t^3 - t), given which sorted neighbours are equal."""
    rows, width = in_data.shape
    cols = np.broadcast_to(np.arange(width), (rows, width))
    new_group = np.ones((rows, width), dtype=bool)
    new_group[:, 1:] = ~tied
    start = np.maximum.accumulate(np.where(new_group, cols, 0), axis=1)
    ends_here = np.ones((rows, width), dtype=bool)
    ends_here[:, :-1] = ~tied
    end = np.minimum.accumulate(np.where(ends_here, cols, width - 1)[:, ::-1], axis=1)[:, ::-1]
    size = (end - start + 1).astype(float)
    # Each tie group of size t contributes t^3 - t; summed per member that is t^2 - 1.
    tie_sum = np.where(in_data, size * size - 1.0, 0.0).sum(axis=1)
    return np.where(in_data, (start + end) / 2.0 + 1.0, 0.0), tie_sum


def masked_quantile(values: np.ndarray, mask: np.ndarray, q: float) -> np.ndarray:
    """Per row: the q-quantile (linear interpolation) of the masked values; NaN if none."""
    filled = np.sort(np.where(mask, values, np.inf), axis=1)
    count = mask.sum(axis=1)
    pos = np.maximum(count - 1, 0) * q
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, np.maximum(count - 1, 0))
    rows = np.arange(values.shape[0])
    low = filled[rows, lo]
    high = filled[rows, hi]
    with np.errstate(invalid="ignore"):
        out = low + (high - low) * (pos - lo)
    answer: np.ndarray = np.where(count > 0, out, np.nan)
    return answer


def _without_machine_speeds(
    logs: np.ndarray, machines: np.ndarray, valid: np.ndarray, settings: DetectionSettings
) -> np.ndarray:
    """Log durations moved to the window's most common machine type's speed.

    Each machine type's offset is its median minus the reference type's median, over the same
    window, so a code change (which moves every type alike) survives and the mix does not.
    Types with too few runs in the window keep their values: ranks shrug off a rare one."""
    rows = logs.shape[0]
    codes = np.where(valid & (machines >= 0), machines, -1)
    known = codes >= 0
    if not known.any():
        return logs
    kinds = int(codes.max()) + 1
    key = np.where(known, np.arange(rows)[:, None] * kinds + codes, -1)
    counts = np.bincount(key[known], minlength=rows * kinds).reshape(rows, kinds)
    flat_key = key[known]
    flat_val = logs[known]
    order = np.lexsort((flat_val, flat_key))
    sorted_key = flat_key[order]
    sorted_val = flat_val[order]
    starts = np.searchsorted(sorted_key, np.arange(rows * kinds), side="left")
    sizes = counts.ravel()
    has = sizes > 0
    lo = starts + np.maximum(sizes - 1, 0) // 2
    hi = starts + sizes // 2
    med = np.full(rows * kinds, np.nan)
    safe_lo = np.minimum(lo, max(len(sorted_val) - 1, 0))
    safe_hi = np.minimum(hi, max(len(sorted_val) - 1, 0))
    med[has] = (sorted_val[safe_lo[has]] + sorted_val[safe_hi[has]]) / 2.0
    med = med.reshape(rows, kinds)
    # The reference is the most common type; among equally common ones the fastest, so the
    # choice does not hang on how the codes were numbered.
    most = counts.max(axis=1, keepdims=True)
    reference = np.where(counts == most, np.nan_to_num(med, nan=np.inf), np.inf).argmin(axis=1)
    ref_med = med[np.arange(rows), reference]
    ref_count = counts[np.arange(rows), reference]
    offset = med - ref_med[:, None]
    enough = settings.min_machine_runs
    usable = (counts >= enough) & (ref_count >= enough)[:, None]
    offset = np.where(usable, offset, 0.0)
    per_cell = np.where(known, offset[np.arange(rows)[:, None], np.maximum(codes, 0)], 0.0)
    return logs - per_cell
