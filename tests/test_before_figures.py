"""Every "before" figure in README.md's Measured table is recorded in its bench's docstring with
the commit of the code measured and the command: figures typed by hand
can no longer drift from what the bench recorded."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# "was X", "before: X", "before the <change>, X" up to the end of the clause.
BEFORE = re.compile(r"(?:\bwas |\bbefore: |\bbefore the [\w -]+?, )([^;|)]*?)(?=;|\)|\||$| and \d)")
RECORD = re.compile(
    r"^- `(?P<figure>[^`]+)`:(?P<what>.*?)\bcommit\s+(?P<commit>[0-9a-f]{12,40})\b"
    r"(?P<rest>.*?)`(?P<command>python -m bench\.\w+[^`]*)`",
    re.MULTILINE | re.DOTALL,
)
COMMAND = re.compile(r"`python -m (bench\.\w+)")


def measured_rows() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Measured", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and "bench." in line]


def records(module: str) -> list[dict[str, str]]:
    """The "Before" records of a bench module's docstring."""
    path = REPO / (module.replace(".", "/") + ".py")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    before = doc.split("\nBefore (", 1)[1] if "\nBefore (" in doc else ""
    return [m.groupdict() for m in RECORD.finditer(before)]


def test_every_readme_before_figure_is_recorded_with_its_commit() -> None:
    rows = measured_rows()
    assert len(rows) > 10
    checked = 0
    for row in rows:
        result = row.split("|")[2]
        phrases = BEFORE.findall(result)
        if not phrases:
            continue
        modules = COMMAND.findall(row)
        assert modules, row
        recorded = [r for m in modules for r in records(m)]
        for phrase in phrases:
            # Each before-phrase quotes at least one recorded figure of the row's bench...
            assert any(r["figure"] in phrase for r in recorded), (phrase, modules)
            checked += 1
        # ... and every recorded figure is what the README says.
        for record in recorded:
            assert record["figure"] in result, (record["figure"], row)
    assert checked >= 5


def test_each_record_names_a_commit_of_this_history_and_a_runnable_command() -> None:
    modules = sorted({m for row in measured_rows() for m in COMMAND.findall(row)})
    found = [(m, r) for m in modules for r in records(m)]
    assert len(found) >= 6
    if not (REPO / ".git").exists():
        pytest.fail("not a git checkout: the recorded commits cannot be checked")
    for module, record in found:
        commit = record["commit"]
        known = subprocess.run(
            ["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=REPO, capture_output=True
        )
        assert known.returncode == 0, (module, commit)
        assert record["command"].startswith(f"python -m {module}"), (module, record["command"])


def test_the_phrase_finder_sees_each_wording() -> None:
    cell = (
        " refused in 0.03 s (was 1.31 / 5.23 / 20.56 s, quadratic); before: 2 of 5 rounds froze"
        "; before the allocator fix, jobs were up to 29% off; measured before the figures below "
    )
    assert BEFORE.findall(cell) == [
        "1.31 / 5.23 / 20.56 s, quadratic",
        "2 of 5 rounds froze",
        "jobs were up to 29% off",
    ]
