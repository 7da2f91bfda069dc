"""Parametrize explosions: ranking, value sources, proposals, saving arithmetic, the code."""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest

from analysis.reduce.covering import is_covering
from analysis.reduce.parametrize import (
    find_explosions,
    infer_values_from_ids,
    propose_covering,
)
from app.schemas import reduce as answers
from ingest.model import results_frame
from model.frames import empty_runs

FILE = "test/test_transforms.py"
ARGNAMES = ("fill", "severity", "mixture_width", "chain_depth", "all_ops", "grayscale")
VALUES = (
    ("None", "128", "[255, 0, 0]"),
    ("1", "10"),
    ("1", "3"),
    ("-1", "2"),
    ("True", "False"),
    ("True", "False"),
)


def _frame(rows):
    """rows: (function, params, param_values, duration_s, run_id) tuples."""
    frame = results_frame(
        {
            "nodeid": [f"{FILE}::{f}[{p}]" if p else f"{FILE}::{f}" for f, p, _, _, _ in rows],
            "file": [FILE] * len(rows),
            "function": [f for f, _, _, _, _ in rows],
            "params": [p for _, p, _, _, _ in rows],
            "param_values": [v for _, _, v, _, _ in rows],
            "outcome": ["passed"] * len(rows),
            "duration_s": [d for _, _, _, d, _ in rows],
        }
    )
    frame["run_id"] = [r for _, _, _, _, r in rows]
    return frame


def _augmix(duration=lambda k: 1.5, other_s=27.0):
    rows: list[tuple[str, str | None, dict[str, str] | None, float, int]] = []
    for k, combo in enumerate(itertools.product(*VALUES)):
        rows.append(
            (
                "test_augmix",
                "-".join(combo),
                dict(zip(ARGNAMES, combo, strict=True)),
                duration(k),
                1,
            )
        )
    rows.append(("test_other", None, None, other_s, 1))
    return _frame(rows)


def test_augmix_is_found_with_its_share_of_the_file():
    (explosion,) = find_explosions(_augmix(), empty_runs())
    assert explosion.test == f"{FILE}::test_augmix"
    assert len(explosion.variants) == 96
    assert explosion.values_source == "plugin"
    assert explosion.argnames == ARGNAMES
    assert explosion.values == VALUES
    assert explosion.duration_s == pytest.approx(96 * 1.5)  # 144.0
    assert explosion.file_duration_s == pytest.approx(144.0 + 27.0)
    assert explosion.share_of_file == pytest.approx(144.0 / 171.0)  # 84.2%


def test_augmix_strength_one_three_rows_and_saving():
    (explosion,) = find_explosions(_augmix(), empty_runs())
    proposal = propose_covering(explosion, 1)
    assert len(proposal.rows) == 3
    assert proposal.current_s == pytest.approx(144.0)
    assert proposal.proposed_s == pytest.approx(4.5)
    assert proposal.saved_s == pytest.approx(139.5)
    assert proposal.saved_fraction == pytest.approx(139.5 / 144.0)
    assert all(r.measured for r in proposal.rows)
    levels = [len(v) for v in VALUES]
    idx = [[VALUES[a].index(v) for a, v in enumerate(r.values)] for r in proposal.rows]
    assert is_covering(idx, levels, 1)


def test_augmix_strength_two_at_most_seven_rows():
    (explosion,) = find_explosions(_augmix(), empty_runs())
    proposal = propose_covering(explosion, 2)
    assert len(proposal.rows) <= 7
    assert proposal.lower_bound == 6
    assert proposal.proposed_s == pytest.approx(1.5 * len(proposal.rows))
    assert proposal.saved_s == pytest.approx(144.0 - 1.5 * len(proposal.rows))
    levels = [len(v) for v in VALUES]
    idx = [[VALUES[a].index(v) for a, v in enumerate(r.values)] for r in proposal.rows]
    assert is_covering(idx, levels, 2)


def test_cheapest_variants_are_picked():
    # Variant k (in product order) costs 1 + 0.01 k. Fill is the slowest-varying argument,
    # so fill value f has offsets 32 f + (0..31). Three rows must give the three fills, and
    # two of them must be complementary on the five binary arguments (offsets o and 31 - o):
    # minimum = 3 + 0.01 * (32 * (0 + 1 + 2) + 31) = 4.27.
    (explosion,) = find_explosions(_augmix(duration=lambda k: 1.0 + 0.01 * k), empty_runs())
    proposal = propose_covering(explosion, 1)
    assert proposal.proposed_s == pytest.approx(4.27)
    assert proposal.current_s == pytest.approx(96 + 0.01 * sum(range(96)))


def test_median_per_variant_over_runs():
    rows = []
    for params, durations in {
        "a-x": (1.0, 2.0, 9.0),
        "a-y": (3.0, 3.0, 3.0),
        "b-x": (0.5,),
    }.items():
        a, b = params.split("-")
        for run_id, d in enumerate(durations, start=1):
            rows.append(("test_f", params, {"p": a, "q": b}, d, run_id))
    rows.append(("test_f", "b-y", {"p": "b", "q": "y"}, 4.0, 1))
    (explosion,) = find_explosions(_frame(rows), empty_runs())
    medians = {v.params: v.median_s for v in explosion.variants}
    assert medians == {"a-x": 2.0, "a-y": 3.0, "b-x": 0.5, "b-y": 4.0}
    assert explosion.duration_s == pytest.approx(9.5)
    assert explosion.window_s == pytest.approx(1 + 2 + 9 + 9 + 0.5 + 4)
    assert explosion.runs == 3
    proposal = propose_covering(explosion, 1)
    # 2 rows: {a-x, b-y} = 6.0 or {a-y, b-x} = 3.5; the cheaper one wins.
    assert {r.params for r in proposal.rows} == {"a-y", "b-x"}
    assert proposal.saved_s == pytest.approx(9.5 - 3.5)


def test_never_run_combination_is_estimated_at_the_median():
    measured = {("a", "x"): 1.0, ("a", "y"): 2.0, ("b", "x"): 3.0, ("c", "x"): 4.0, ("c", "y"): 9.0}
    rows = [
        ("test_g", f"{p}-{q}", {"p": p, "q": q}, d, 1) for (p, q), d in measured.items()
    ]  # ("b", "y") never ran
    (explosion,) = find_explosions(_frame(rows), empty_runs())
    assert explosion.values_source == "plugin"
    proposal = propose_covering(explosion, 2)
    assert len(proposal.rows) == 6  # 3x2 pairs: every combination
    (unmeasured,) = [r for r in proposal.rows if not r.measured]
    assert unmeasured.values == ("b", "y")
    assert unmeasured.params is None
    assert unmeasured.duration_s == pytest.approx(3.0)  # median of 1, 2, 3, 4, 9
    assert proposal.saved_s == pytest.approx(19.0 - 22.0)
    # Strength 1 can stay on measured variants.
    one = propose_covering(explosion, 1)
    assert len(one.rows) == 3
    assert all(r.measured for r in one.rows)
    # One row per p; b must be b-x (b-y never ran). Measured options: a-y + b-x + c-x = 9,
    # a-x + b-x + c-y = 13. The cheaper 9 wins (a greedy pick of the cheapest a-x gets 13).
    assert one.proposed_s == pytest.approx(9.0)
    assert {r.params for r in one.rows} == {"a-y", "b-x", "c-x"}


def test_ranking_and_top():
    rows = [("test_small", f"{i}", {"i": str(i)}, 1.0, 1) for i in range(3)]
    rows += [("test_big", f"{i}", {"i": str(i)}, 5.0, 1) for i in range(2)]
    rows += [("test_single", "only", {"i": "0"}, 100.0, 1)]  # one variant: not an explosion
    found = find_explosions(_frame(rows), empty_runs())
    assert [e.function for e in found] == ["test_big", "test_small"]
    assert [e.function for e in find_explosions(_frame(rows), empty_runs(), top=1)] == ["test_big"]


def test_inference_from_ids_unambiguous():
    ids = ["-".join(c) for c in itertools.product(["1", "2"], ["True", "False"], ["cpu", "cuda"])]
    values, note = infer_values_from_ids(ids)
    assert values is not None
    assert "inferred" in note
    assert values[0] == ("1", "True", "cpu")
    rows = [("test_h", i, None, 2.0, 1) for i in ids]
    (explosion,) = find_explosions(_frame(rows), empty_runs())
    assert explosion.values_source == "inferred-from-ids"
    assert explosion.argnames == ("arg0", "arg1", "arg2")
    assert explosion.values == (("1", "2"), ("True", "False"), ("cpu", "cuda"))
    proposal = propose_covering(explosion, 2)
    assert len(proposal.rows) == 4  # 2^3 pairs fit in 4 rows
    assert proposal.saved_s == pytest.approx(16.0 - 8.0)
    assert "inferred from JUnit test ids" in proposal.code


@pytest.mark.parametrize(
    ("ids", "reason"),
    [
        (["-1-a", "2-a", "-1-b", "2-b"], "different numbers"),  # a negative number splits
        (["a-x", "b-y", "c-z"], "full grid"),  # zip-style list, not a product
        (["a-x", "a-x-y"], "different numbers"),
    ],
)
def test_inference_from_ids_ambiguous(ids, reason):
    values, note = infer_values_from_ids(ids)
    assert values is None
    assert reason in note
    rows = [("test_k", i, None, 1.0, 1) for i in ids]
    (explosion,) = find_explosions(_frame(rows), empty_runs())
    assert explosion.values_source is None
    assert reason in (explosion.values_note or "")
    with pytest.raises(ValueError, match="values unknown"):
        propose_covering(explosion, 1)
    assert explosion.values_source is None


def _exec_block(code, argnames):
    namespace: dict[str, object] = {}
    source = f"import pytest\n{code}\ndef test_x({', '.join(argnames)}):\n    pass\n"
    exec(compile(source, "<block>", "exec"), namespace)
    (mark,) = namespace["test_x"].pytestmark  # type: ignore[attr-defined]
    return mark.args


def test_code_block_runs_and_holds_the_recorded_reprs():
    (explosion,) = find_explosions(_augmix(), empty_runs())
    proposal = propose_covering(explosion, 2)
    names, rows = _exec_block(proposal.code, ARGNAMES)
    assert names == ",".join(ARGNAMES)
    expected = [tuple(eval(v) for v in r.values) for r in proposal.rows]
    assert rows == expected
    assert "[255, 0, 0]" in proposal.code or "(None" in proposal.code


def test_code_block_for_ids_uses_strings():
    ids = ["-".join(c) for c in itertools.product(["1", "2"], ["cpu", "cuda"])]
    (explosion,) = find_explosions(_frame([("test_m", i, None, 1.0, 1) for i in ids]), empty_runs())
    proposal = propose_covering(explosion, 2)
    names, rows = _exec_block(proposal.code, explosion.argnames)
    assert names == "arg0,arg1"
    assert sorted(rows) == [("1", "cpu"), ("1", "cuda"), ("2", "cpu"), ("2", "cuda")]


def test_single_argument_block_and_placeholder_note():
    rows = [("test_n", f"fn{i}", {"fn": f"fn{i}"}, 1.0, 1) for i in range(3)]
    (explosion,) = find_explosions(_frame(rows), empty_runs())
    proposal = propose_covering(explosion, 2)
    assert len(proposal.rows) == 3
    assert "No stable repr was recorded for fn0, fn1, fn2" in proposal.code
    assert '    "fn",' in proposal.code
    assert "        fn0," in proposal.code


def test_to_dict_is_json_ready():
    import json

    (explosion,) = find_explosions(_augmix(), empty_runs())
    data = json.loads(
        answers.CoveringProposal.of(propose_covering(explosion, 1)).model_dump_json(
            exclude_unset=True
        )
    )
    assert data["size"] == 3
    assert data["values_source"] == "plugin"
    assert data["saved_s"] == pytest.approx(139.5)
    exp = json.loads(answers.Explosion.of(explosion).model_dump_json(exclude_unset=True))
    assert exp["variants"] == 96
    assert math.isclose(exp["share_of_file"], 144 / 171, rel_tol=1e-5)


def test_empty_input():
    assert find_explosions(_frame([("test_z", None, None, 1.0, 1)]), empty_runs()) == []
    assert find_explosions(pd.DataFrame(), empty_runs()) == []
