"""Link the first prose mention of each glossary term in README.md and docs/*.md to its entry.

    python scripts/glossary_links.py           # add the missing links
    python scripts/glossary_links.py --check   # exit 1 when a first mention is not linked

A reader meets a word once before they need it defined: that first mention links to
docs/glossary.md. Code (fenced, indented or inline), headings and existing links are not
prose and are left alone. tests/test_words.py runs `--check`.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
# Generated or the glossary itself.
SKIP = {"glossary.md", "cli.md"}

# Glossary anchor -> how prose names the term (case-insensitive, whole words).
TERMS: dict[str, str] = {
    "allocator-state": r"allocator state",
    "calibration": r"calibration",
    "catalogue": r"catalogues?",
    # Not a table's, a CSV's or a covering array's cell: the CI matrix's.
    "cell": r"(?:CI |matrix |CI matrix )cells?|cells? of (?:a|the|its) (?:CI )?matrix",
    "covering-set": r"covering (?:sets?|arrays?)",
    "developer-wait": r"developer'?s? wait|pipeline wait",
    "execution": r"executions",
    "explosion": r"(?:parametrize )?explosions?",
    "facts": r"facts",
    "first-use-cost": r"first[- ]use(?: cost)?",
    "flaky-test": r"flaky tests?",
    "granularity": r"granularity",
    "heap-bound-time": r"heap-bound(?: test)?(?: time| seconds)?",
    "job-model": r"job model",
    "job-wall": r"job'?s? wall",
    "kept-frames-and-answers": r"kept frames",
    "labels-and-the-labels-key": r"labels key|labels_key",
    "machine-time": r"machine time",
    "matrix-reduction": r"(?:CI )?matrix reduction",
    "pareto-rows": r"pareto (?:table|rows?)",
    "partial-report": r"partial reports?",
    "pipeline": r"pipelines?",
    "plan": r"(?:split|stored|tracked) plans?",
    # Not a benchmark's quiet machine: the planner's normalisation.
    "quarantine": r"quarantine",
    "quiet-machine-normalisation": r"normalised to a quiet machine|quiet wall|quiet-machine",
    "run-queue-wait": r"run-queue (?:wait|delay)",
    "runner": r"test runners?",
    "selection-unit": r"selection units?",
    "setup-overhead": r"setup overhead",
    "shard": r"shards?",
    "snippet": r"(?:CI )?snippets?",
    "strength": r"strength",
    "test-function": r"parametrize ids stripped|test functions?",
    "verdict": r"verdicts?",
}
PATTERNS = {
    # Not part of a path or a name: `docs/catalogues.md`, `shard_plan`.
    anchor: re.compile(rf"(?<![/\w-])(?:{words})(?![\w/-]|\.\w)", re.IGNORECASE)
    for anchor, words in TERMS.items()
}
LINK = re.compile(r"\[[^\]]*\]\([^)]*\)")
CODE_SPAN = re.compile(r"`[^`]*`")
URL = re.compile(r"<?https?://\S+")


@dataclass(frozen=True)
class Mention:
    """The first prose mention of a term in a file: line index and column span."""

    line: int
    start: int
    end: int


def _prose_lines(lines: list[str]) -> list[bool]:
    """Which lines are prose: not inside a fenced or indented code block, not a heading."""
    prose = []
    fenced = False
    previous_blank_or_code = True
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            prose.append(False)
            continue
        indented = line.startswith("    ") and previous_blank_or_code
        is_code = fenced or indented
        prose.append(not is_code and not line.startswith("#") and line.strip() != "")
        previous_blank_or_code = line.strip() == "" or is_code
    return prose


def _masked(line: str, keep: str, *, in_code: bool = False) -> str:
    """The line with code spans, URLs and links blanked out, but the text of links to `keep`;
    `in_code`: the line starts inside a code span opened on the line before."""
    if in_code:
        close = line.find("`")
        return (
            " " * len(line) if close < 0 else " " * (close + 1) + _masked(line[close + 1 :], keep)
        )
    if line.count("`") % 2:  # a span that continues on the next line
        open_at = line.rfind("`")
        return _masked(line[:open_at], keep) + " " * (len(line) - open_at)

    def blank(match: re.Match[str]) -> str:
        return " " * len(match.group(0))

    def link(match: re.Match[str]) -> str:
        text = match.group(0)
        cut = text.index("](")
        if text[cut + 2 : -1] != keep:
            return " " * len(text)
        return text[: cut + 1] + " " * (len(text) - cut - 1)

    line = CODE_SPAN.sub(blank, line)
    line = LINK.sub(link, line)
    return URL.sub(blank, line)


def _target(path: Path, anchor: str) -> str:
    prefix = "docs/" if path.parent == ROOT else ""
    return f"{prefix}glossary.md#{anchor}"


def first_mention(path: Path, lines: list[str], anchor: str) -> Mention | None:
    """The first prose mention of the term outside links other than its own entry's."""
    pattern = PATTERNS[anchor]
    keep = _target(path, anchor)
    in_code = False
    for index, is_prose in enumerate(_prose_lines(lines)):
        if not is_prose:
            in_code = False
            continue
        match = pattern.search(_masked(lines[index], keep, in_code=in_code))
        if match:
            return Mention(index, match.start(), match.end())
        in_code = in_code != bool(lines[index].count("`") % 2)
    return None


def _linked(path: Path, line: str, anchor: str, mention: Mention) -> bool:
    target = f"]({_target(path, anchor)})"
    return any(
        m.start() <= mention.start < m.end() and target in m.group(0) for m in LINK.finditer(line)
    )


def unlinked(path: Path, lines: list[str]) -> list[str]:
    """The terms whose first prose mention is not a link to their glossary entry."""
    missing = []
    for anchor in TERMS:
        first = first_mention(path, lines, anchor)
        if first is not None and not _linked(path, lines[first.line], anchor, first):
            missing.append(f"{path.relative_to(ROOT)}:{first.line + 1}: {anchor}")
    return missing


def add_links(path: Path, lines: list[str]) -> list[str]:
    """The lines with each term's first prose mention linked to its entry."""
    lines = list(lines)
    for anchor in TERMS:
        first = first_mention(path, lines, anchor)
        if first is None or _linked(path, lines[first.line], anchor, first):
            continue
        line = lines[first.line]
        words = line[first.start : first.end]
        linked = f"[{words}]({_target(path, anchor)})"
        lines[first.line] = line[: first.start] + linked + line[first.end :]
    return lines


def documents() -> list[Path]:
    """README.md and every docs/*.md but the glossary and the generated CLI reference."""
    docs = sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in SKIP)
    return [ROOT / "README.md", *docs]


def main(argv: list[str] | None = None) -> int:
    """Add the links, or with --check list the first mentions that lack one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="list, do not write")
    args = parser.parse_args(argv)
    missing = []
    for path in documents():
        lines = path.read_text(encoding="utf-8").split("\n")
        if args.check:
            missing += unlinked(path, lines)
        else:
            path.write_text("\n".join(add_links(path, lines)), encoding="utf-8")
    if missing:
        sys.stderr.write(
            "first mentions not linked to docs/glossary.md "
            "(run python scripts/glossary_links.py):\n" + "\n".join(missing) + "\n"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
