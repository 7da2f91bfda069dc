"""Domain errors are mapped to their HTTP answer once, not caught in each route or page."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOMAIN_ERRORS = (
    r"(AnswerError|RecommendationError|CatalogueError|PlanNotFound|PipelineUnknown"
    r"|ShardPinMismatch)"
)
# A catch that turns a domain error into an HTTP answer by hand (a page that shows the error
# inside its own panels, beside the parts it could answer, is rendering, not mapping).
CATCH = re.compile(r"^\s*except\b[^:]*\b" + DOMAIN_ERRORS + r"\b[^\n]*\n\s*raise\b", re.MULTILINE)


def test_no_route_or_page_catches_a_domain_error() -> None:
    """Every handler in app/api and app/pages leaves domain errors to the one registered mapping."""
    offenders = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
        for folder in ("app/api", "app/pages")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for text in [path.read_text()]
        for match in CATCH.finditer(text)
    ]
    assert offenders == [], offenders
