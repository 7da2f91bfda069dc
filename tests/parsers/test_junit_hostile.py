"""Hostile and broken input: refused fast, with a precise code, file, line and column."""

from __future__ import annotations

import gzip
import time
import tracemalloc
import zlib

import pytest

from ingest.model import ReportParseError
from ingest.parsers import ParseLimits, parse_report

MIB = 1024 * 1024
CASE = b'<testsuite name="s"><testcase classname="c" name="t" time="1.5"/></testsuite>'


def parse_error(data: bytes, **kwargs: object) -> ReportParseError:
    with pytest.raises(ReportParseError) as caught:
        parse_report(data, filename="r.xml", **kwargs)  # type: ignore[arg-type]
    assert caught.value.filename == "r.xml"
    return caught.value


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<testsuite name="&lol9;"><testcase name="&lol9;"/></testsuite>
"""


def test_billion_laughs_is_refused_at_the_doctype() -> None:
    start = time.perf_counter()
    error = parse_error(BILLION_LAUGHS)
    assert time.perf_counter() - start < 1.0
    assert error.code == "xml-dtd-forbidden"
    assert (error.line, error.column) == (2, 1)
    assert error.describe().startswith("r.xml:2:1: [xml-dtd-forbidden]")


@pytest.mark.parametrize(
    "doctype",
    [
        b'<!DOCTYPE t [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
        b'<!DOCTYPE t [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>',
        b'<!DOCTYPE testsuite SYSTEM "file:///etc/passwd">',
    ],
)
def test_external_entities_never_resolve(doctype: bytes) -> None:
    data = (
        b'<?xml version="1.0"?>\n' + doctype + b'\n<testsuite><testcase name="&xxe;"/></testsuite>'
    )
    error = parse_error(data)
    assert error.code == "xml-dtd-forbidden"
    assert "root:" not in error.describe()


def test_entity_reference_without_declaration_is_refused() -> None:
    error = parse_error(b'<testsuite>\n<testcase name="a&xxe;"/></testsuite>')
    assert (error.code, error.line) == ("xml-entity-forbidden", 2)


def test_predefined_entities_and_character_references_are_fine() -> None:
    report = parse_report(b'<testsuite><testcase name="a&amp;b&#233;&lt;"/></testsuite>')
    assert report.results["function"].tolist() == ["a&bé<"]


def test_gzip_bomb_stops_at_the_decompressed_limit_without_inflating_it() -> None:
    # 200 MiB of zeros compress to about 200 KB; the limit here is 8 MiB.
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    bomb = b"".join(compressor.compress(zeros) for _ in range(200)) + compressor.flush()
    assert len(bomb) < MIB
    limits = ParseLimits(max_decompressed_bytes=8 * MIB)
    tracemalloc.start()
    try:
        error = parse_error(bomb, limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.code == "decompressed-too-large"
    # Inflation is abandoned one bounded step past the limit, nowhere near 200 MiB.
    assert peak < 24 * MIB


def test_default_limits() -> None:
    assert ParseLimits() == ParseLimits(max_decompressed_bytes=500 * MIB, max_node_bytes=16 * MIB)


def test_concatenated_gzip_members_are_all_read() -> None:
    data = gzip.compress(CASE[:30]) + gzip.compress(CASE[30:])
    assert len(parse_report(data).results) == 1


def test_small_decompressed_limit_is_configurable() -> None:
    data = gzip.compress(CASE * 1)
    limits = ParseLimits(max_decompressed_bytes=len(CASE) - 1)
    assert parse_error(data, limits=limits).code == "decompressed-too-large"
    assert (
        len(parse_report(data, limits=ParseLimits(max_decompressed_bytes=len(CASE))).results) == 1
    )


def test_oversize_plain_input_is_refused_before_parsing() -> None:
    limits = ParseLimits(max_decompressed_bytes=100)
    assert parse_error(CASE + b" " * 100, limits=limits).code == "decompressed-too-large"


def test_gzip_is_accepted_transparently() -> None:
    report = parse_report(gzip.compress(CASE), filename="r.xml.gz")
    assert report.results["duration_s"].tolist() == [1.5]


def test_truncated_gzip() -> None:
    assert parse_error(gzip.compress(CASE)[:-12]).code == "gzip-invalid"


def test_truncated_xml_is_its_own_code_with_position() -> None:
    data = b'<?xml version="1.0"?>\n<testsuites>\n<testsuite name="s">\n<testcase name="t">'
    error = parse_error(data)
    assert error.code == "xml-truncated"
    assert error.line == 4


def test_malformed_xml_mid_document_has_line_and_column() -> None:
    data = b'<testsuite>\n  <testcase name="t" time=1/>\n</testsuite>'
    error = parse_error(data)
    assert (error.code, error.line, error.column) == ("xml-malformed", 2, 27)


def test_utf16_with_bom_parses() -> None:
    text = '<?xml version="1.0" encoding="UTF-16"?>\n' + CASE.decode().replace(
        'name="t"', 'name="tést ✓"'
    )
    for encoding in ("utf-16", "utf-16-be"):
        data = text.encode(encoding)
        if encoding == "utf-16-be":
            data = b"\xfe\xff" + data
        report = parse_report(data)
        assert report.results["function"].tolist() == ["tést ✓"]


def test_utf8_bom_and_whitespace_before_the_declaration() -> None:
    data = b'\xef\xbb\xbf\n\n  <?xml version="1.0"?>\n' + CASE
    assert len(parse_report(data).results) == 1
    broken = b'\n\n<?xml version="1.0"?>\n<testsuite>\n<testcase name="a" "/>'
    # Positions count the blank lines that were skipped.
    assert parse_error(broken).line == 5


def test_latin1_bytes_declared_utf8_are_an_encoding_error_at_the_byte() -> None:
    data = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<testsuite>\n<testcase name="caf\xe9"/>\n</testsuite>'
    )
    error = parse_error(data)
    assert error.code == "encoding-invalid"
    assert (error.line, error.column) == (3, 20)
    assert "0xe9" in error.message


def test_latin1_declared_as_such_parses() -> None:
    data = (
        b'<?xml version="1.0" encoding="ISO-8859-1"?>\n'
        b'<testsuite><testcase name="caf\xe9"/></testsuite>'
    )
    assert parse_report(data).results["function"].tolist() == ["café"]


@pytest.mark.parametrize(
    # <test-run> is NUnit 3 now, read by its own parser; xUnit's native root is not.
    "root",
    [b"<robot/>", b"<html><body/></html>", b"<assemblies></assemblies>"],
)
def test_xml_that_is_not_junit(root: bytes) -> None:
    error = parse_error(b'<?xml version="1.0"?>\n' + root)
    assert (error.code, error.line) == ("not-junit", 2)


@pytest.mark.parametrize("data", [b"", b"   \n\t", b"\xef\xbb\xbf", b"\n\n"])
def test_empty_report(data: bytes) -> None:
    assert parse_error(data).code == "empty-report"


def test_unknown_format_requested() -> None:
    assert parse_error(CASE, format="xunit").code == "format-unknown"
