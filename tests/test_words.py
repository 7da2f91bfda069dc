"""Every pointer a reader meets can be followed: no issue numbers (the clone has no tracker),
no citation of a design file the repository does not hold, and every `*.md#anchor` link in the
code and docs names a heading that exists."""

from __future__ import annotations

import importlib.util
import re
import sys
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The shipped packages and everything beside them that holds Python (tests/data is corpus
# files written by other projects, not ours).
PACKAGES = (
    "app",
    "ingest",
    "analysis",
    "figures",
    "dashboards",
    "pgcodec",
    "client",
    "model",
    "demo",
    "scripts",
    "bench",
    "tests",
    "migrations",
)
# `(#18)`, `#27)`, `before #18`, `(#2)`: two digits after `#`, or one inside a parenthesis.
# Not CSS colours (`#1f77b4`, `#123`, `#000000`), HTML entities (`&#39;`), `owner/repo#16354`,
# nor the ` #2` that marks a test's second execution (docs/parsing.md#executions-not-names).
ISSUE_HASH = re.compile(r"(?<![\w#&/])#\d{2}(?![\w])|\(#\d(?![\w])")
# `issue 27`, `issue #13`, `Issues 13`.
ISSUE_WORD = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
# The design doc lived outside the repository: the story is docs/story.md now, and a line
# that mentions the story links it.
MISSING_DOC = re.compile(r"ARCHITECTURE\.md|\b[Tt]he story\b(?!.*story\.md)")
MD_LINK = re.compile(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md)#([\w-]+)")


def _python_files() -> list[Path]:
    files = []
    for package in PACKAGES:
        base = ROOT / package
        if base.is_dir():
            files += [p for p in base.rglob("*.py") if "data" not in p.relative_to(ROOT).parts]
    # This file spells out what it looks for.
    return sorted(p for p in files if p != Path(__file__).resolve())


# Templates, scripts, styles and settings: pointers a reader meets outside Python too.
TEXT_SUFFIXES = {".html", ".js", ".css", ".toml", ".sh", ".yml", ".yaml"}


def _text_files() -> list[Path]:
    files = [ROOT / "pyproject.toml", ROOT / "docker-compose.yml", ROOT / "Dockerfile"]
    for package in PACKAGES:
        base = ROOT / package
        if base.is_dir():
            files += [
                p
                for p in base.rglob("*")
                if p.suffix in TEXT_SUFFIXES and "data" not in p.relative_to(ROOT).parts
            ]
    return sorted(p for p in files if p.is_file())


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _cited_files() -> list[Path]:
    # The story itself may say "the story" without linking to itself.
    return [p for p in _python_files() + _doc_files() if p.name != "story.md"]


def _hits(pattern: re.Pattern[str], files: list[Path]) -> list[str]:
    hits = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return hits


def test_the_file_lists_are_not_empty() -> None:
    # A pattern that scans nothing would pass whatever the code says.
    assert len(_python_files()) > 300
    assert len(_doc_files()) > 10
    assert len(_text_files()) > 20


@pytest.mark.parametrize("pattern", [ISSUE_HASH, ISSUE_WORD], ids=["hash", "word"])
def test_no_issue_numbers(pattern: re.Pattern[str]) -> None:
    """Say the reason, or link the doc section that records the decision, instead."""
    assert _hits(pattern, _python_files() + _text_files() + _doc_files()) == []


def test_no_citation_of_a_missing_design_doc() -> None:
    """The product's story is docs/story.md: cite its section, not a file a clone lacks."""
    assert _hits(MISSING_DOC, _cited_files()) == []


@pytest.mark.parametrize(
    ("line", "issue"),
    [
        ("# runners (#17)", True),
        ("(issue #13, item 4)", True),
        ("# a read stores nothing,\n# #27) whose", True),
        ("Issue 27 item 2: a nameless row", True),
        ('color: "#1f77b4"', False),
        ("background: #000000;", False),
        ("&#39;", False),
        ("argotorg/solidity#16354", False),
        ("an item 3", False),
        ("before #18 fell back", True),
        ("(#2)", True),
        ('"s::C::x #2"', False),
    ],
)
def test_the_patterns_tell_issue_numbers_from_colours(line: str, issue: bool) -> None:
    found = bool(ISSUE_HASH.search(line) or ISSUE_WORD.search(line))
    assert found is issue


def slug(heading: str) -> str:
    """The anchor GitHub gives a markdown heading."""
    text = unicodedata.normalize("NFC", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading's anchor in a markdown file, with GitHub's -1, -2 for repeats."""
    seen: dict[str, int] = {}
    found = set()
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"#{1,6} ", line):
            continue
        base = slug(line.lstrip("#"))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def test_slug_matches_github() -> None:
    assert slug(" Did it come true? (plans that close the loop)") == (
        "did-it-come-true-plans-that-close-the-loop"
    )
    assert slug(" The allocator (`--laptime-malloc`)") == "the-allocator---laptime-malloc"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


def test_every_md_anchor_resolves() -> None:
    """A link to `docs/x.md#part` in code or docs names a heading that x.md has."""
    broken = []
    for path in _python_files() + _doc_files():
        text = path.read_text(encoding="utf-8")
        for target, anchor in MD_LINK.findall(text):
            name = Path(target).name
            doc = ROOT / name if name == "README.md" else ROOT / "docs" / name
            if not doc.is_file():
                broken.append(f"{path.relative_to(ROOT)}: {target} does not exist")
            elif anchor not in anchors(doc.read_text(encoding="utf-8")):
                broken.append(f"{path.relative_to(ROOT)}: {target}#{anchor}")
    assert broken == []


def test_every_path_the_glossary_names_exists() -> None:
    """The glossary says where each term lives; a moved module must move its entry too."""
    text = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    paths = re.findall(r"`((?:app|ingest|analysis|model|client|figures|demo)/[\w./-]*)`", text)
    assert len(paths) > 30
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_the_glossary_defines_the_domain_words() -> None:
    """The words a newcomer meets first each have an entry."""
    headings = anchors((ROOT / "docs" / "glossary.md").read_text(encoding="utf-8"))
    words = (
        "cell", "facts", "kept-frames-and-answers", "selection-unit", "explosion", "strength",
        "covering-set", "verdict", "pareto-rows", "first-use-cost", "setup-overhead",
        "developer-wait", "machine-time", "job-wall", "shard", "pipeline", "plan",
        "calibration", "catalogue", "labels-and-the-labels-key", "test-function",
        "quiet-machine-normalisation", "heap-bound-time", "job-model", "runner",
    )  # fmt: skip
    assert [w for w in words if w not in headings] == []


def _glossary_links() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "glossary_links", ROOT / "scripts" / "glossary_links.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclass looks its module up by name while the module runs.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_each_terms_first_mention_links_the_glossary() -> None:
    """README.md and docs/*.md link each glossary term where a reader first meets it."""
    links = _glossary_links()
    missing = [m for path in links.documents() for m in links.unlinked(path, _lines(path))]
    assert missing == []


def test_an_unlinked_first_mention_is_found_and_linked() -> None:
    links = _glossary_links()
    doc = ROOT / "docs" / "planner.md"
    lines = [
        "# A heading about the job model",
        "",
        "    the job model in an indented block",
        "See `the job model` and [the story](story.md): the job model predicts; the job model.",
    ]
    assert links.unlinked(doc, lines) == ["docs/planner.md:4: job-model"]
    fixed = links.add_links(doc, lines)
    assert fixed[3].endswith(": the [job model](glossary.md#job-model) predicts; the job model.")
    assert links.unlinked(doc, fixed) == []
    # From the README the entry is one folder down.
    readme = links.add_links(ROOT / "README.md", lines)
    assert "[job model](docs/glossary.md#job-model)" in readme[3]


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")
