"""A clone carries everything its tests read: no test reaches outside the
repository, the vendored corpus is whole and byte-exact, and no corpus listing is empty."""

from __future__ import annotations

import hashlib
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests import corpus

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

# Spellings of a path outside the checkout: the sibling shared/ folder, a parent of the repo.
OUTSIDE = re.compile(r"\.\./shared|[\"'/]shared[\"'/]|REPO\.parent|ROOT\.parent|/work/")
PARENTS = re.compile(r"parents\[(\d+)\]((?:\.parent)*)")
FILE_PARENTS = re.compile(r"__file__\)(?:\.resolve\(\))?((?:\.parent)+)")


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts)


def is_outside(code: str, depth: int) -> bool:
    """Whether one line names a path outside the repository, from a file `depth` folders down."""
    code = code.split("#", 1)[0]
    bad = bool(OUTSIDE.search(code))
    for index, ups in PARENTS.findall(code):
        bad |= int(index) + ups.count(".parent") > depth
    for ups in FILE_PARENTS.findall(code):
        bad |= ups.count(".parent") - 1 > depth
    return bad


def outside_references(path: Path) -> list[str]:
    """Lines of one test file that name a path outside the repository."""
    depth = len(path.relative_to(REPO).parts) - 1  # parents[depth] is the repository root
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for number, line in enumerate(lines, 1)
        if is_outside(line, depth)
    ]


def test_the_outside_check_catches_the_old_spellings() -> None:
    bad = [
        'CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"',
        'SONOBUOY = Path(__file__).resolve().parents[3] / "x.xml"',
        'CORPUS = REPO.parent / "shared" / "corpus"',
        'X = Path(__file__).parent.parent.parent.parent / "y"',
        'open("../shared/corpus/MANIFEST.tsv")',
    ]
    good = [
        "SAMPLES = Path(__file__).parent / 'samples'",
        "REPO = Path(__file__).resolve().parents[2]",
        "X = Path(__file__).parent.parent.parent / 'pyproject.toml'",
    ]
    # As if in tests/parsers/: two folders below the repository root.
    assert [is_outside(line, 2) for line in bad + good] == [True] * len(bad) + [False] * 3


def test_no_test_file_refers_to_paths_outside_the_repository() -> None:
    files = python_files()
    assert len(files) > 100
    here = Path(__file__).resolve()  # this file spells the patterns it looks for
    found = [line for path in files if path != here for line in outside_references(path)]
    assert found == []


def test_every_manifest_entry_exists_and_every_file_is_listed() -> None:
    rows = corpus.manifest_rows()
    listed = {row["local_path"] for row in rows}
    assert len(rows) == len(listed) > 400
    missing = sorted(rel for rel in listed if not (corpus.CORPUS / rel).is_file())
    assert missing == []
    assert all(row["license"] and row["commit"] and row["repo"] for row in rows)
    own = {"MANIFEST.tsv", "README.md", "SHA256SUMS", "durations/FORMAT_NOTES.md"}
    assert set(corpus.corpus_files()) - own == listed


def test_other_attribution_tables_name_files_that_exist() -> None:
    tables = [corpus.NUMBERS / "ATTRIBUTION.tsv", *TESTS.glob("parsers/samples/*/MANIFEST.tsv")]
    assert len(tables) >= 2
    for table in tables:
        lines = table.read_text(encoding="utf-8").splitlines()
        names = [line.split("\t", 1)[0] for line in lines if line.strip()]
        if names[0] == "local_path":
            names = names[1:]
        assert names
        assert [n for n in names if not (table.parent / n).is_file()] == [], table


def test_the_corpus_is_byte_exact() -> None:
    sums = (corpus.CORPUS / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    assert len(sums) > 400
    wrong = []
    for line in sums:
        digest, rel = line.split("  ", 1)
        if hashlib.sha256(corpus.read_corpus(rel)).hexdigest() != digest:
            wrong.append(rel)
    assert wrong == []
    # Two files keep CRLF line ends: proof that nothing normalised them on the way.
    crlf = "junit/dorny__test-reporter/__tests__/fixtures/external/jest/jest-test-results.xml"
    assert b"\r\n" in corpus.read_corpus(crlf)


def test_git_keeps_the_test_data_as_bytes() -> None:
    if not (REPO / ".git").exists():
        pytest.fail("not a git checkout: the attribute check needs git")
    rel = "tests/data/corpus/junit/launchableinc__cli/tests/data/cts/test_result.xml"
    out = subprocess.run(
        ["git", "check-attr", "text", "--", rel], cwd=REPO, capture_output=True, text=True
    )
    assert out.stdout.strip() == f"{rel}: text: unset"


def test_the_parametrized_corpus_lists_are_not_empty() -> None:
    from tests.parsers import test_junit_corpus, test_junit_fast
    from tests.runners import test_runner_corpus

    assert len(test_junit_corpus.corpus_files()) > 300
    assert len(test_junit_corpus.corpus_files(test_junit_corpus.DURATIONS)) >= 6
    assert len(test_junit_fast.xml_files()) > 100
    assert len(test_runner_corpus.ROWS) > 100


def test_an_empty_parametrize_fails_at_collection() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["pytest"]["ini_options"]["empty_parameter_set_mark"] == (
        "fail_at_collect"
    )


def test_a_missing_fixture_says_which_file_and_where_it_is_listed(tmp_path: Path) -> None:
    with pytest.raises(corpus.MissingCorpusError) as caught:
        corpus.read_corpus("junit/no-such-report.xml")
    message = str(caught.value)
    assert "junit/no-such-report.xml" in message
    assert "MANIFEST.tsv" in message
    with pytest.raises(corpus.MissingCorpusError, match="holds no file"):
        corpus.corpus_files(root=tmp_path)
