"""The one way tests reach their vendored data (tests/data): a missing file is a loud failure.

The corpus under tests/data/corpus is a byte-exact copy of real reports written by other tools;
MANIFEST.tsv names each file's repository, path, commit, licence and producer. A test that
names a file which is not there, or lists a folder that is empty, fails with the file and the
manifest named, never skips: a clone must carry everything its tests read.
"""

from __future__ import annotations

import csv
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "corpus"
MANIFEST = CORPUS / "MANIFEST.tsv"
NUMBERS = DATA / "numbers"  # the reports of tests/server/test_numbers_agree.py


class MissingCorpusError(FileNotFoundError):
    """A fixture file the tests need is not in this checkout."""

    def __init__(self, path: Path, why: str = "is missing") -> None:
        super().__init__(
            f"test data {path} {why}: the tests carry their own data under tests/data; "
            f"restore it from git (every corpus file is listed in {MANIFEST} with its source)"
        )
        self.path = path


def corpus_path(rel: str, root: Path = CORPUS) -> Path:
    """The vendored file `rel` (relative to `root`), which must exist."""
    path = root / rel
    if not path.is_file():
        raise MissingCorpusError(path)
    return path


def read_corpus(rel: str, root: Path = CORPUS) -> bytes:
    """The bytes of one vendored file."""
    return corpus_path(rel, root).read_bytes()


def corpus_files(sub: str = "", root: Path = CORPUS) -> list[str]:
    """Every file under root/sub, relative to root/sub, sorted; an empty list is an error."""
    folder = root / sub
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    if not files:
        raise MissingCorpusError(folder, "holds no file")
    return files


def manifest_rows() -> list[dict[str, str]]:
    """MANIFEST.tsv's rows (local_path, repo, path_in_repo, commit, license, tool, notes)."""
    if not MANIFEST.is_file():
        raise MissingCorpusError(MANIFEST)
    with MANIFEST.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not rows:
        raise MissingCorpusError(MANIFEST, "lists no file")
    return rows
