"""The bulk scanner (junit_fast) gives exactly what the expat-only parser gives, or declines.

Each case is parsed twice: through the scanner (threshold lowered to 1 so small documents
use it) and with expat over every element; frames, warnings, session and properties must
be identical, and an error must carry the same code, line and column.
"""

from __future__ import annotations

import pandas as pd
import pytest

from ingest.model import ParsedReport, ReportParseError
from ingest.parsers import junit
from ingest.parsers.junit_fast import collect_fast
from tests import corpus

CORPUS = corpus.CORPUS / "junit"


def scanned(data: bytes) -> ParsedReport | None:
    """The report through the scanner, None when the scanner declines the document."""
    text, encoding, _ = junit.prepare_xml(data, "r.xml")
    cols = collect_fast(text, encoding, min_cases=1)
    return None if cols is None else junit._build_report(cols)


def assert_same(fast: ParsedReport, full: ParsedReport) -> None:
    for column in full.results.columns:
        pd.testing.assert_series_equal(fast.results[column], full.results[column])
    pd.testing.assert_frame_equal(fast.results, full.results)
    assert fast.warnings == full.warnings
    assert fast.session == full.session
    assert fast.properties == full.properties


def check(data: bytes) -> ParsedReport | None:
    """Scanner vs expat on one document; returns the scanner's report (None: declined)."""
    expected: ReportParseError | None = None
    try:
        full = junit.parse_junit(data, filename="r.xml", fast=False)
    except ReportParseError as error:
        expected = error
    if expected is not None:
        # The scanner must decline, and the default path must raise the very same error.
        assert scanned(data) is None
        with pytest.raises(ReportParseError) as caught:
            junit.parse_junit(data, filename="r.xml")
        assert caught.value.to_dict() == expected.to_dict()
        return None
    fast = scanned(data)
    if fast is not None:
        assert_same(fast, full)
    assert_same(junit.parse_junit(data, filename="r.xml"), full)
    return fast


def xml_files() -> list[str]:
    out = []
    for rel in corpus.corpus_files("junit"):
        head = corpus.read_corpus(rel, CORPUS)[:2]
        if head[:1] in (b"<", b"\n", b" ", b"\xef") or head in (b"\xff\xfe", b"\xfe\xff"):
            out.append(rel)
    return out


def test_every_corpus_document_is_identical_and_most_are_scanned() -> None:
    used = 0
    files = xml_files()
    assert len(files) > 100
    for rel in files:
        used += check(corpus.read_corpus(rel, CORPUS)) is not None
    # Most JUnit files of the corpus have childless testcases in one layout.
    assert used >= 80


def test_the_bench_report_is_scanned_and_identical() -> None:
    from bench.bench_parse_junit import generate_pytest_report

    report = check(generate_pytest_report(3000))
    assert report is not None
    assert len(report.results) == 3000
    assert set(report.results["outcome"]) == {"passed", "failed", "skipped"}


def cases(n: int, attrs: str = 'classname="m.C" name="t{i}" time="0.{i}"') -> str:
    return "\n".join(f"<testcase {attrs.format(i=i)}/>" for i in range(n))


def doc(body: str, head: str = '<?xml version="1.0" encoding="utf-8"?>\n') -> bytes:
    return (head + body).encode("utf-8")


def test_suites_properties_and_children_keep_their_places() -> None:
    body = (
        '<testsuites><testsuite name="a" hostname="h1" timestamp="2026-01-01T00:00:00">'
        '<properties><property name="k" value="v"/></properties>'
        + cases(3)
        + '<testcase classname="m.C" name="f" time="1"><failure message="boom"/></testcase>'
        + cases(2, 'classname="m.D" name="u{i}" time="2"')
        + '</testsuite><testsuite name="b" hostname="h2">'
        + cases(2)
        + '<testsuite name="inner">'
        + cases(2, 'classname="m.E" name="e{i}" time="3"')
        + "</testsuite>"
        + '<testcase classname="m.C" name="s" time="1"><skipped/></testcase>'
        + "</testsuite></testsuites>"
    )
    report = check(doc(body))
    assert report is not None
    frame = report.results
    assert len(frame) == 11
    assert frame["suite"].tolist() == ["a"] * 6 + ["b"] * 2 + ["inner"] * 2 + ["b"]
    assert frame["outcome"].tolist()[3] == "failed"
    assert frame["message"].tolist()[3] == "boom"
    assert report.properties == {"k": "v"}


def repeats(suite: str) -> ParsedReport:
    """Two scanned runs around a real testcase repeating a scanned name, under `suite`."""
    body = (
        f"<testsuite{suite}>"
        + cases(2)
        + '<testcase classname="m.C" name="t1" time="5"><failure message="x"/></testcase>'
        + cases(2)
        + "</testsuite>"
    )
    report = check(doc(body))
    assert report is not None
    return report


def test_repeats_across_scanned_and_real_rows_are_numbered_the_same() -> None:
    report = repeats("")
    assert report.results["nodeid"].tolist() == [
        "m.C::t0",
        "m.C::t1",
        "m.C::t1 #2",
        "m.C::t0 #2",
        "m.C::t1 #3",
    ]
    assert report.results["attempts"].tolist() == [1] * 5


def test_pytest_reruns_across_scanned_and_real_rows_merge_the_same() -> None:
    report = repeats(' name="pytest"')
    assert report.results["attempts"].tolist() == [2, 3]
    assert report.results["duration_s"].tolist() == pytest.approx([0.0, 5.2])


@pytest.mark.parametrize(
    "special",
    [
        'name="a&amp;b"',
        'name="a&#10;b"',
        'name="tab\there"',
        'name="line\nbreak"',
        "name='single &apos;quoted&apos;'",
        'name="x" status="skipped"',
        'name="x" time="1,5"',
        'name="y" time="-1"',
    ],
)
def test_values_needing_decoding_or_other_layouts_go_through_expat(special: str) -> None:
    body = f"<testsuite>{cases(4)}<testcase classname='m.C' {special}/>{cases(3)}</testsuite>"
    assert check(doc(body)) is not None


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ('<testsuite>{c}<testcase classname="m.C" name="t" line="&xxe;"/></testsuite>', None),
        ('<testsuite>{c}<testcase classname="m.C" name="a&xxe;" time="1"/></testsuite>', None),
        ('<testsuite>{c}<testcase classname="m.C" name="a<b" time="1"/></testsuite>', None),
        ('<testsuite>{c}<testcase classname="m.C" name="\x01" time="1"/></testsuite>', None),
        ("<testsuite>{c}</testsuite>{c}", None),
        ("<testsuite>{c}", "xml-truncated"),
        ("{c}", None),
        ("<results>{c}</results>", "not-junit"),
        ('<!DOCTYPE t [<!ENTITY x "y">]><testsuite>{c}</testsuite>', "xml-dtd-forbidden"),
        ("<testsuite>{c}<testcase/></testsuite><testsuite/>", None),
    ],
)
def test_broken_documents_fail_exactly_as_expat_says(body: str, code: str | None) -> None:
    data = doc(body.format(c=cases(5)))
    with pytest.raises(ReportParseError) as caught:
        junit.parse_junit(data, filename="r.xml", fast=False)
    if code is not None:
        assert caught.value.code == code
    check(data)


@pytest.mark.parametrize(
    "body",
    [
        # Testcases inside a comment or a CDATA section are not testcases.
        "<testsuite>{c}<!-- {c} --></testsuite>",
        "<testsuite>{c}<system-out><![CDATA[{c}]]></system-out></testsuite>",
        # A testcase nested in a testcase is ignored, as expat's handlers ignore it.
        '<testsuite><testcase classname="m.C" name="outer">{c}</testcase>{c}</testsuite>',
        # `</testcase>` inside CDATA does not end the testcase.
        '<testsuite><testcase classname="m.C" name="o"><system-out><![CDATA[</testcase>{c}]]>'
        "</system-out></testcase></testsuite>",
        # Our marker attribute in the document itself.
        '<testsuite>{c}<testcase laptime-run="0" name="z"/></testsuite>',
    ],
)
def test_markup_that_hides_or_nests_testcases(body: str) -> None:
    data = doc(body.format(c=cases(4)))
    full = junit.parse_junit(data, fast=False)
    check(data)
    # What the expat handlers count is what we count.
    assert len(junit.parse_junit(data).results) == len(full.results)


def test_utf16_and_bom_input_is_scanned_after_conversion() -> None:
    text = '<?xml version="1.0" encoding="UTF-16"?>\n<testsuite>' + cases(5) + "</testsuite>"
    data = b"\xff\xfe" + text.encode("utf-16-le")
    assert check(data) is not None
    assert check(b"\xef\xbb\xbf\n  " + doc("<testsuite>" + cases(5) + "</testsuite>")) is not None


def test_other_declared_encodings_are_left_to_expat() -> None:
    data = (
        b'<?xml version="1.0" encoding="ISO-8859-1"?>\n<testsuite>'
        + cases(5).encode()
        + b'<testcase name="caf\xe9"/></testsuite>'
    )
    assert scanned(data) is None
    assert check(data) is None
    assert junit.parse_junit(data).results["function"].tolist()[-1] == "café"


def test_small_documents_use_expat_alone() -> None:
    text, encoding, _ = junit.prepare_xml(doc("<testsuite>" + cases(5) + "</testsuite>"), None)
    assert collect_fast(text, encoding) is None
    assert collect_fast(text, encoding, min_cases=5) is not None


@pytest.mark.parametrize(
    "case",
    [
        '<failure message="boom">trace</failure>',
        '<failure message="">  text only\n\tkept  </failure>',
        "<failure>\n</failure>",
        '<error message="e" type="E"/>',
        "<skipped/>",
        ' <skipped type="pytest.skip" message="no gpu">skip</skipped>\n',
        "<skip/>",
        "<ignored message='i'></ignored >",
        "<disabled/>",
        '<failure message="' + "m" * 600 + '"/>',
        "<failure>" + "t" * 600 + "</failure>",
        # Left to expat: a reference, a carriage return, a second child, another child.
        '<failure message="a &amp; b"/>',
        "<failure>a &lt; b</failure>",
        "<failure>line\r\nbreak</failure>",
        '<failure message="x"/><error message="y"/>',
        "<system-out>out</system-out>",
        '<flakyFailure message="x"/>',
    ],
)
def test_testcases_with_one_outcome_child_are_scanned_the_same(case: str) -> None:
    body = (
        f'<testsuite>{cases(4)}<testcase classname="m.C" name="c" time="1">{case}</testcase>'
        f"{cases(3)}</testsuite>"
    )
    assert check(doc(body)) is not None


@pytest.mark.parametrize(
    "case",
    [
        '<failure message="a" message="b"/>',
        "<failure>a ]]> b</failure>",
        "<failure>a</error>",
    ],
)
def test_malformed_outcome_children_fail_as_expat_says(case: str) -> None:
    body = f'<testsuite>{cases(4)}<testcase classname="m.C" name="c">{case}</testcase></testsuite>'
    data = doc(body)
    with pytest.raises(ReportParseError):
        junit.parse_junit(data, filename="r.xml", fast=False)
    check(data)


@pytest.mark.parametrize(
    "name", ["t[a]", "t[a-b]", "t[a]b", "[a]", "t[]", "t[a[b]]", "t[a]b]", "t[", "", "t]"]
)
@pytest.mark.parametrize("suite", ["pytest", "other"])
def test_scanned_names_split_into_function_and_params_as_split_params(
    name: str, suite: str
) -> None:
    body = (
        f'<testsuite name="{suite}">{cases(3)}<testcase classname="m.C" name="{name}" '
        f'time="0.5"/><testcase classname="m.C" name="{name}&amp;" time="0.5"/></testsuite>'
    )
    report = check(doc(body))
    assert report is not None


def test_layouts_without_a_name_and_repeated_or_missing_times() -> None:
    body = (
        "<testsuite>"
        + cases(4, 'classname="m.C" time="0.1"')
        + cases(3, 'classname="m.C" name="a{i}"')
        + cases(3, 'classname="m.C" name="b{i}" time="0.1"')
        + "</testsuite>"
    )
    report = check(doc(body))
    assert report is not None
    # The four nameless testcases are left out, in both paths alike.
    assert len(report.results) == 6
    assert any("4 result(s) with no test name" in w for w in report.warnings)
    assert report.results["duration_s"].isna().sum() == 3


@pytest.mark.parametrize("inside", ["", "\n    ", " \t", "\r\n"])
def test_testcases_closed_by_an_end_tag_are_scanned_the_same(inside: str) -> None:
    # go-junit-report and jest-junit close every testcase with an end tag, empty or holding
    # only whitespace: the same rows as `<testcase .../>`, and the same scan.
    closed = "\n".join(
        f'<testcase classname="m.C" name="t{i}" time="0.{i}">{inside}</testcase>' for i in range(6)
    )
    for body in (
        f'<testsuites><testsuite name="s">{closed}</testsuite></testsuites>',
        f'<testsuites><testsuite name="s">{closed}{cases(2)}</testsuite></testsuites>',
    ):
        report = check(doc(body))
        assert report is not None
        text, encoding, _ = junit.prepare_xml(doc(body), "r.xml")
        cols = collect_fast(text, encoding, min_cases=1)
        assert cols is not None
        assert cols.scanned_rows == len(report.results) == body.count("<testcase")
