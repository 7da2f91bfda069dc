"""A synthetic CI history shaped like a large Python project's (torchvision-like), for demos.

Pure numpy/pandas and deterministic per seed. Durations are lognormal and heavy-tailed: two
huge files (`tests/test_models.py` ~34% and `tests/test_backbone_utils.py` ~28% of CPU test
time; the model tests ~3x slower on GPU jobs, ~61% there), a `test_augmix` parametrize
explosion of 96 variants taking ~84% of `tests/test_transforms.py`, markers, flaky tests, a few
failures, CPU and GPU jobs over os/python(/cuda) labels, several pipelines (commits) per day.
Job wall = setup overhead + test time / xdist workers; GPU job setup is about as long as its
tests. Repeated strings are categoricals so ten million results fit in memory.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pandas as pd

from model.frames import RESULT_COLUMNS, RUN_COLUMNS, RUN_MEASURE_DEFAULTS

MODELS_FILE = "tests/test_models.py"
BACKBONE_FILE = "tests/test_backbone_utils.py"
TRANSFORMS_FILE = "tests/test_transforms.py"
AUGMIX_PARAMS: dict[str, tuple[str, ...]] = {
    "fill": ("None", "85", "fill2"),
    "severity": ("1", "10"),
    "mixture_width": ("1", "2"),
    "chain_depth": ("-1", "2"),
    "all_ops": ("True", "False"),
    "grayscale": ("True", "False"),
}
# Share of one CPU run's test time per heavy file, and of the transforms file for augmix.
FILE_SHARES = {MODELS_FILE: 0.34, BACKBONE_FILE: 0.28, TRANSFORMS_FILE: 0.05}
AUGMIX_SHARE_OF_FILE = 0.843
GPU_MODEL_SLOWDOWN = 3.0
MEAN_TEST_S = 0.9  # mean test duration of a Linux CPU run, all files together
MIN_TESTS = 200
MAX_JOBS = 16

_TOPICS = (
    "ops", "io", "image", "video", "datasets", "utils", "onnx", "extended_models",
    "functional_tensor", "datasets_download", "internal_utils", "architecture_ops",
    "prototype_transforms", "transforms_tensor", "video_reader", "hub", "backbone_fpn",
    "quantized_models", "detection_utils", "anchor_utils", "encoded_video", "box_ops",
)  # fmt: skip
_MODEL_FAMILIES = (
    "resnet", "vit_b_", "mobilenet_v", "efficientnet_b", "regnet_y_", "convnext_", "swin_",
    "densenet", "maxvit_t", "fasterrcnn_resnet50_fpn_v", "raft_", "r3d_",
)  # fmt: skip
_ARG_NAMES = ("dtype", "size", "device", "interpolation", "antialias", "batch_size", "mode")


@dataclass(frozen=True)
class SyntheticHistory:
    """Results (RESULT_COLUMNS + run_id) and runs (RUN_COLUMNS) frames of a synthetic history."""

    results: pd.DataFrame
    runs: pd.DataFrame


@dataclass(frozen=True)
class _JobCell:
    name: str
    os: str
    python: str
    cuda: str | None
    machine: str
    workers: int
    speed: float
    setup_s: float


@dataclass(frozen=True)
class _Catalog:
    """Per test-definition arrays, built once per (tests, seed)."""

    nodeid: pd.CategoricalDtype
    file_codes: np.ndarray
    file: pd.CategoricalDtype
    class_codes: np.ndarray
    classname: pd.CategoricalDtype
    function_codes: np.ndarray
    function: pd.CategoricalDtype
    params_codes: np.ndarray
    params: pd.CategoricalDtype
    param_values: np.ndarray  # object: dict | None
    markers: np.ndarray  # object: list[str]
    base_s: np.ndarray
    setup_frac: np.ndarray
    rss_mib: np.ndarray
    is_model: np.ndarray
    needs_cuda: np.ndarray
    skip_windows: np.ndarray
    flaky_prone: np.ndarray


def generate_history(
    *,
    days: int = 14,
    tests: int = 2000,
    jobs: int = 4,
    seed: int = 0,
    start: date | None = None,
    pipelines_per_day: int = 3,
) -> SyntheticHistory:
    """The whole history in two frames: days x pipelines_per_day x jobs runs of `tests` tests.

    Equal to concatenating `iter_history_chunks` with the same arguments. Ten million results
    is days=60, tests=10_000, jobs=16, pipelines_per_day=1.
    """
    chunks = list(
        iter_history_chunks(
            days=days,
            tests=tests,
            jobs=jobs,
            seed=seed,
            start=start,
            pipelines_per_day=pipelines_per_day,
        )
    )
    return SyntheticHistory(
        results=pd.concat([c.results for c in chunks], ignore_index=True),
        runs=pd.concat([c.runs for c in chunks], ignore_index=True),
    )


def iter_history_chunks(
    *,
    days: int = 14,
    tests: int = 2000,
    jobs: int = 4,
    seed: int = 0,
    start: date | None = None,
    pipelines_per_day: int = 3,
) -> Iterator[SyntheticHistory]:
    """The same history one day at a time (run ids continue across days), for loaders."""
    if tests < MIN_TESTS:
        raise ValueError(f"tests must be at least {MIN_TESTS} (the augmix explosion alone is 96)")
    if not 1 <= jobs <= MAX_JOBS:
        raise ValueError(f"jobs must be between 1 and {MAX_JOBS}")
    if days < 1 or pipelines_per_day < 1:
        raise ValueError("days and pipelines_per_day must be at least 1")
    first_day = start if start is not None else date(2024, 1, 1)
    catalog = _build_catalog(tests, np.random.default_rng([seed, 0]))
    cells = _job_cells(jobs)
    runs_per_day = pipelines_per_day * len(cells)
    for day_index in range(days):
        rng = np.random.default_rng([seed, 1, day_index])
        day = first_day + timedelta(days=day_index)
        yield _generate_day(
            catalog,
            cells,
            rng,
            day=day,
            day_index=day_index,
            pipelines_per_day=pipelines_per_day,
            first_run_id=day_index * runs_per_day + 1,
        )


def _job_cells(jobs: int) -> list[_JobCell]:
    pythons = ("3.11", "3.10", "3.9", "3.8")
    py_speed = {"3.11": 1.0, "3.10": 1.03, "3.9": 1.05, "3.8": 1.08}
    os_spec = {  # machine, xdist workers, speed, setup seconds
        "linux": ("2xlarge+", 4, 1.0, 240.0),
        "macos": ("large", 3, 1.25, 300.0),
        "windows": ("windows.xlarge", 2, 1.5, 420.0),
    }
    n_gpu = jobs // 4
    cpu = [
        _JobCell(f"unittest-{os_}-py{py}", os_, py, None, *os_spec[os_][:2],
                 os_spec[os_][2] * py_speed[py], os_spec[os_][3])
        for py, os_ in itertools.product(pythons, ("linux", "macos", "windows"))
    ][: jobs - n_gpu]  # fmt: skip
    gpu = [
        _JobCell(f"unittest-linux-py{py}-cuda{cuda}", "linux", py, cuda, "gpu.nvidia.medium",
                 2, 0.9 * py_speed[py], 0.0)
        for py, cuda in zip(pythons, ("12.1", "11.8", "12.1", "11.8"), strict=True)
    ][:n_gpu]  # fmt: skip
    return cpu + gpu


def _build_catalog(tests: int, rng: np.random.Generator) -> _Catalog:
    n_models = round(0.12 * tests)
    n_backbone = round(0.08 * tests)
    n_transforms = 96 + round(0.05 * tests)
    n_rest = tests - n_models - n_backbone - n_transforms
    n_other_files = max(3, n_rest // 60)
    other_files = [
        f"tests/test_{_TOPICS[i % len(_TOPICS)]}"
        + (f"_{i // len(_TOPICS)}" if i >= len(_TOPICS) else "")
        + ".py"
        for i in range(n_other_files)
    ]
    counts = 1 + rng.multinomial(n_rest - n_other_files, rng.dirichlet(np.ones(n_other_files)))
    other_w = rng.lognormal(0.0, 1.0, n_other_files)
    other_share = (1.0 - sum(FILE_SHARES.values())) * other_w / other_w.sum()

    rows: list[tuple[str, str | None, str, str | None, dict[str, str] | None]] = []
    file_share: dict[str, float] = dict(FILE_SHARES)
    _add_functions(rows, rng, MODELS_FILE, n_models, model_params=True)
    _add_functions(rows, rng, BACKBONE_FILE, n_backbone, model_params=True)
    for combo in itertools.product(*AUGMIX_PARAMS.values()):
        values = dict(zip(AUGMIX_PARAMS, combo, strict=True))
        rows.append((TRANSFORMS_FILE, None, "test_augmix", "-".join(combo), values))
    _add_functions(rows, rng, TRANSFORMS_FILE, n_transforms - 96, model_params=False)
    for name, count, share in zip(other_files, counts, other_share, strict=True):
        _add_functions(rows, rng, name, int(count), model_params=False)
        file_share[name] = float(share)

    files = np.array([r[0] for r in rows], dtype=object)
    functions = np.array([r[2] for r in rows], dtype=object)
    weights = rng.lognormal(0.0, 1.2, tests)
    is_augmix = functions == "test_augmix"
    in_transforms = files == TRANSFORMS_FILE
    base = np.empty(tests)
    ref_total = MEAN_TEST_S * tests
    for name, share in file_share.items():
        mask = files == name
        if name == TRANSFORMS_FILE:
            # augmix variants are alike; the rest of the file shares what is left.
            aug = mask & is_augmix
            rest = mask & ~is_augmix
            base[aug] = ref_total * share * AUGMIX_SHARE_OF_FILE / aug.sum()
            base[rest] = ref_total * share * (1 - AUGMIX_SHARE_OF_FILE) * _norm(weights[rest])
        else:
            base[mask] = ref_total * share * _norm(weights[mask])

    is_model = (files == MODELS_FILE) | (files == BACKBONE_FILE)
    # Markers: model files are unmarked (docs/story.md: nobody had marked them slow yet).
    draw = rng.random(tests)
    marker_options: list[list[str]] = [[], ["slow"], ["needs_cuda"], ["slow", "needs_cuda"]]
    marker_index = np.select([draw < 0.04, draw < 0.07, draw < 0.08], [1, 2, 3], 0)
    marker_index[is_model] = 0
    markers = np.empty(tests, dtype=object)
    shared = [list(m) for m in marker_options]
    for i, opt in enumerate(shared):
        for row in np.flatnonzero(marker_index == i):
            markers[row] = opt  # one shared list per marker set keeps memory flat
    needs_cuda = marker_index >= 2

    heavy_fixture = rng.random(tests) < 0.05
    setup_frac = np.where(
        heavy_fixture, rng.uniform(0.3, 0.6, tests), rng.uniform(0.0, 0.04, tests)
    )
    rss = rng.lognormal(np.log(250.0), 0.4, tests)
    rss[files == MODELS_FILE] *= rng.uniform(8.0, 20.0, int((files == MODELS_FILE).sum()))
    rss[files == BACKBONE_FILE] *= 4.0
    rss[in_transforms & is_augmix] *= 1.5

    def categorical(values: list[str | None]) -> tuple[np.ndarray, pd.CategoricalDtype]:
        codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
        return np.asarray(codes, dtype=np.int32), pd.CategoricalDtype(list(uniques))

    nodeids = [f"{f}::{c}::{fn}" if c else f"{f}::{fn}" for f, c, fn, _, _ in rows]
    nodeids = [n + (f"[{r[3]}]" if r[3] else "") for n, r in zip(nodeids, rows, strict=True)]
    file_codes, file_dtype = categorical([r[0] for r in rows])
    class_codes, class_dtype = categorical([r[1] for r in rows])
    function_codes, function_dtype = categorical([r[2] for r in rows])
    params_codes, params_dtype = categorical([r[3] for r in rows])
    param_values = np.empty(tests, dtype=object)
    param_values[:] = [r[4] for r in rows]
    return _Catalog(
        nodeid=pd.CategoricalDtype(nodeids),
        file_codes=file_codes,
        file=file_dtype,
        class_codes=class_codes,
        classname=class_dtype,
        function_codes=function_codes,
        function=function_dtype,
        params_codes=params_codes,
        params=params_dtype,
        param_values=param_values,
        markers=markers,
        base_s=base,
        setup_frac=setup_frac,
        rss_mib=rss,
        is_model=files == MODELS_FILE,
        needs_cuda=needs_cuda,
        skip_windows=rng.random(tests) < 0.03,
        flaky_prone=rng.random(tests) < 0.01,
    )


def _norm(values: np.ndarray) -> np.ndarray:
    total = values.sum()
    return values / total if total > 0 else values


def _add_functions(
    rows: list[tuple[str, str | None, str, str | None, dict[str, str] | None]],
    rng: np.random.Generator,
    file: str,
    count: int,
    *,
    model_params: bool,
) -> None:
    stem = file.rsplit("/", 1)[-1].removesuffix(".py").removeprefix("test_")
    k = 0
    while count > 0:
        variants = 1 if rng.random() < 0.55 else int(min(count, rng.geometric(0.12)))
        variants = min(variants, count)
        cls = f"Test{stem.title().replace('_', '')}{k // 5}" if rng.random() < 0.3 else None
        function = f"test_{stem}_{k}"
        if variants == 1:
            rows.append((file, cls, function, None, None))
        else:
            arg = "model_name" if model_params else _ARG_NAMES[k % len(_ARG_NAMES)]
            for v in range(variants):
                if model_params:
                    family = _MODEL_FAMILIES[v % len(_MODEL_FAMILIES)]
                    ident = f"{family}{v // len(_MODEL_FAMILIES)}"
                else:
                    ident = f"{arg}{v}"
                rows.append((file, cls, function, ident, {arg: ident}))
        count -= variants
        k += 1


def _generate_day(
    catalog: _Catalog,
    cells: list[_JobCell],
    rng: np.random.Generator,
    *,
    day: date,
    day_index: int,
    pipelines_per_day: int,
    first_run_id: int,
) -> SyntheticHistory:
    n_tests = len(catalog.base_s)
    n_runs = pipelines_per_day * len(cells)
    cell_of_run = np.tile(np.arange(len(cells)), pipelines_per_day)
    pipe_of_run = np.repeat(np.arange(pipelines_per_day), len(cells))
    speed = np.array([c.speed for c in cells])[cell_of_run]
    gpu = np.array([c.cuda is not None for c in cells])[cell_of_run]
    windows = np.array([c.os == "windows" for c in cells])[cell_of_run]
    workers = np.array([c.workers for c in cells])[cell_of_run]

    # (runs, tests) matrices: every run executes every test.
    slowdown = np.where(gpu[:, None] & catalog.is_model[None, :], GPU_MODEL_SLOWDOWN, 1.0)
    duration = (
        catalog.base_s[None, :] * speed[:, None] * slowdown
        * rng.lognormal(0.0, 0.12, (n_runs, n_tests))
    )  # fmt: skip
    skipped = (~gpu[:, None] & catalog.needs_cuda[None, :]) | (
        windows[:, None] & catalog.skip_windows[None, :]
    )
    duration = np.where(skipped, 0.001, duration)
    setup = duration * np.where(skipped, 1.0, catalog.setup_frac[None, :])
    teardown = np.where(skipped, 0.0, duration * 0.005)
    call = duration - setup - teardown
    failed = ~skipped & (rng.random((n_runs, n_tests)) < 2e-4)
    flaky = (
        ~skipped & ~failed & catalog.flaky_prone[None, :] & (rng.random((n_runs, n_tests)) < 0.15)
    )
    outcome = np.where(skipped, 3, np.where(failed, 1, 0)).astype(np.int8)
    rss = catalog.rss_mib[None, :] * rng.lognormal(0.0, 0.05, (n_runs, n_tests))
    worker = rng.integers(0, workers[:, None], (n_runs, n_tests))
    worker = np.where(workers[:, None] > 1, worker, -1)

    run_ids = np.arange(first_run_id, first_run_id + n_runs, dtype=np.int64)
    total = n_runs * n_tests
    tiled = np.tile(np.arange(n_tests), n_runs)

    def cat(codes: np.ndarray, dtype: pd.CategoricalDtype) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, dtype=dtype)

    max_workers = max(c.workers for c in cells)
    results = pd.DataFrame(
        {
            "nodeid": cat(tiled.astype(np.int32), catalog.nodeid),
            "file": cat(catalog.file_codes[tiled], catalog.file),
            "classname": cat(catalog.class_codes[tiled], catalog.classname),
            "function": cat(catalog.function_codes[tiled], catalog.function),
            "params": cat(catalog.params_codes[tiled], catalog.params),
            "param_values": catalog.param_values[tiled],
            "markers": catalog.markers[tiled],
            "outcome": cat(outcome.ravel(), pd.CategoricalDtype(["passed", "failed", "error",
                                                                 "skipped"])),
            "duration_s": duration.ravel(),
            "setup_s": setup.ravel(),
            "call_s": call.ravel(),
            "teardown_s": teardown.ravel(),
            "attempts": np.where(flaky, 2, 1).astype(np.int8).ravel(),
            # A flaky test's two attempts are taken as equal halves of its time.
            "last_attempt_s": np.where(flaky, duration / 2, np.nan).ravel(),
            "flaky": flaky.ravel(),
            "peak_rss_mib": rss.ravel(),
            # Synthetic history is JUnit-like here: no CPU, order, heap or wait measured.
            "cpu_s": np.full(total, np.nan),
            "seq": np.full(total, np.nan),
            "gc_s": np.full(total, np.nan),
            "heap_scans": np.full(total, np.nan),
            "heap_objects": np.full(total, np.nan),
            "cpu_wait_s": np.full(total, np.nan),
            "worker": cat(worker.ravel().astype(np.int8),
                          pd.CategoricalDtype([f"gw{i}" for i in range(max_workers)])),
            "suite": cat(np.zeros(total, dtype=np.int8), pd.CategoricalDtype(["pytest"])),
            "message": cat(np.where(failed, 0, np.where(skipped, 1, -1)).astype(np.int8).ravel(),
                           pd.CategoricalDtype(["AssertionError: tensors are not close",
                                                "SKIPPED: not supported on this platform"])),
            "run_id": np.repeat(run_ids.astype(np.int32), n_tests),
        }
    )  # fmt: skip
    results = results[[*RESULT_COLUMNS, "run_id"]]

    test_s = duration.sum(axis=1)
    test_wall = test_s / workers * rng.uniform(1.03, 1.10, n_runs)  # xdist imbalance
    setup_base = np.array([c.setup_s for c in cells])[cell_of_run]
    overhead = np.where(
        gpu, test_wall * rng.uniform(0.9, 1.1, n_runs), setup_base * rng.lognormal(0, 0.1, n_runs)
    )
    pipeline_index = day_index * pipelines_per_day + pipe_of_run
    day_start = datetime(day.year, day.month, day.day, 8, tzinfo=UTC)
    offsets_s = pipe_of_run * (12 * 3600 / pipelines_per_day) + rng.uniform(0, 180, n_runs)
    commits = {int(p): f"{rng.integers(0, 2**63):016x}" for p in np.unique(pipeline_index)}
    runs = pd.DataFrame(
        {
            "run_id": run_ids,
            "pipeline": [f"pipeline-{p}" for p in pipeline_index],
            "job": [cells[c].name for c in cell_of_run],
            "branch": ["main" if p == 0 else f"pr/{1000 + i}"
                       for p, i in zip(pipe_of_run, pipeline_index, strict=True)],
            "commit": [commits[int(p)] for p in pipeline_index],
            "machine": [cells[c].machine for c in cell_of_run],
            "started_at": pd.to_datetime(
                [day_start + timedelta(seconds=float(s)) for s in offsets_s], utc=True
            ),
            "wall_s": overhead + test_wall,
            "peak_rss_mib": rss.max(axis=1) + 150.0 * workers,
            "xdist_workers": workers.astype(np.int64),
            "labels": [_labels(cells[c]) for c in cell_of_run],
            "partial": False,
            "hidden_rows": 0,
        }
    )  # fmt: skip
    runs = runs.assign(**RUN_MEASURE_DEFAULTS)
    return SyntheticHistory(results=results, runs=runs[list(RUN_COLUMNS)])


def _labels(cell: _JobCell) -> dict[str, str]:
    labels = {"os": cell.os, "python": cell.python}
    if cell.cuda is not None:
        labels["cuda"] = cell.cuda
    return labels
