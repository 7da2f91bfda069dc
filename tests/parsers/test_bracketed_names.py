"""Brackets are parametrize ids only at the end of a pytest-style nodeid."""

from __future__ import annotations

import pandas as pd

from analysis.rollups.shares import function_keys
from ingest.parsers import parse_report
from tests.corpus import corpus_path, read_corpus

SONOBUOY = "junit/inorton__junit2html/tests/junit-sonobouy.xml"


def test_ginkgo_names_stay_distinct_functions() -> None:
    results = parse_report(read_corpus(SONOBUOY)).results
    keys = function_keys(results["nodeid"], results["params"])
    # Each testcase of the Kubernetes e2e report is its own function; none is cut at "[".
    assert len(set(keys)) == results["nodeid"].nunique()
    assert "Kubernetes e2e suite::" not in set(keys)
    assert results["params"].isna().all()


def test_only_a_pytest_style_ending_is_stripped_when_params_are_unknown() -> None:
    nodeids = pd.Series(
        [
            "tests/test_x.py::test_y[a-1]",
            "tests/test_x.py::TestC::test_z[b]",
            "Kubernetes e2e suite::[k8s.io] Pods should be updated [Conformance]",
            "k::renders [x]",
            "[sig-network] Services [Slow]",
        ]
    )
    keys = function_keys(nodeids, pd.Series([None] * len(nodeids), dtype=object))
    assert list(keys) == [
        "tests/test_x.py::test_y",
        "tests/test_x.py::TestC::test_z",
        "Kubernetes e2e suite::[k8s.io] Pods should be updated [Conformance]",
        "k::renders [x]",
        "[sig-network] Services [Slow]",
    ]


def test_cli_table_prints_bracketed_names_as_text_not_markup() -> None:
    from click.testing import CliRunner

    from app.cli.analyze_cmd import analyze

    result = CliRunner().invoke(
        analyze, ["--by", "test", "--limit", "0", str(corpus_path(SONOBUOY))]
    )
    assert result.exit_code == 0, result.output
    # rich would swallow "[sig-network]" and "[k8s.io]" as style tags if given as markup.
    assert "[sig-network] Networking" in result.output
    assert "[k8s.io]" in result.output
