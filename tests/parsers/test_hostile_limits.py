"""Hostile sizes: one content limit whatever the transport, a cap on any single XML node,
and precise codes for containers gzip does not cover."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tracemalloc
import zipfile
import zlib

import pytest

from ingest.model import ReportParseError
from ingest.parsers import ParseLimits, parse_report
from ingest.parsers.xml_guard import NodeGuard

MIB = 1024 * 1024
CASE = b'<testsuite name="s"><testcase classname="c" name="t" time="1.5"/></testsuite>'
HEAD = b'<testsuite name="s"><testcase classname="c" name="t" time="1.5"/>'
TAIL = b"</testsuite>"


def parse_error(data: bytes, **kwargs: object) -> ReportParseError:
    with pytest.raises(ReportParseError) as caught:
        parse_report(data, filename="r.xml", **kwargs)  # type: ignore[arg-type]
    return caught.value


def gzip_stream(parts: list[bytes], repeat: int = 1) -> bytes:
    """gzip of the concatenated parts, the middle part repeated, without building it whole."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [compressor.compress(parts[0])]
    out += [compressor.compress(parts[1]) for _ in range(repeat)]
    out += [compressor.compress(parts[2]), compressor.flush()]
    return b"".join(out)


def test_a_40_mb_comment_is_refused_after_one_node_of_inflation() -> None:
    # The 450 MB comment scaled down: a small gzip of a 40 MB comment.
    data = gzip_stream([HEAD + b"<!--", b"x" * MIB, b"-->" + TAIL], repeat=40)
    assert len(data) < MIB
    limits = ParseLimits(max_node_bytes=2 * MIB)
    tracemalloc.start()
    try:
        error = parse_error(data, limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.code == "node-too-large"
    assert "comment" in error.message
    # Refused a chunk or two past the cap: nowhere near the 40 MB inflated.
    assert peak < 12 * MIB


@pytest.mark.parametrize(
    ("opening", "body", "closing", "named"),
    [
        # "<" inside a comment, CDATA or PI does not end it: the section is measured whole.
        (b"<!--", b"<a> " * 1024, b"-->", "comment"),
        (b"<system-out><![CDATA[", b"<b>" * 1024, b"]]></system-out>", "CDATA"),
        (b"<?pi ", b"<p " * 1024, b"?>", "processing instruction"),
        (b"<system-out>", b"t" * 3000, b"</system-out>", "text or tag"),
        (b'<property name="p" value="', b"v" * 3000, b'"/>', "text or tag"),
    ],
)
def test_every_kind_of_node_is_capped(
    opening: bytes, body: bytes, closing: bytes, named: str
) -> None:
    limits = ParseLimits(max_node_bytes=2 * MIB)
    data = HEAD + opening + body * 1024 + closing + TAIL
    error = parse_error(data, limits=limits)
    assert error.code == "node-too-large"
    assert named in error.message
    # The same node a little under the cap parses.
    small = HEAD + opening + body * 400 + closing + TAIL
    assert len(parse_report(small, limits=limits).results) == 1


def test_a_node_straddling_chunks_is_measured_across_them() -> None:
    guard = NodeGuard(100)
    for piece in (b"<r><!", b"-- " + b"<" * 40, b"<" * 40, b" -", b"-></r>"):
        guard.feed(piece)
    for piece in (b"<r><![CDA", b"TA[", b"<" * 60):
        guard.feed(piece)
    with pytest.raises(ReportParseError) as caught:
        guard.feed(b"<" * 60)
    assert caught.value.code == "node-too-large"
    assert "CDATA" in caught.value.message


@pytest.mark.parametrize("transport", ["plain", "gzip"])
def test_one_limit_on_the_content_whatever_the_transport(transport: str) -> None:
    wrap = gzip.compress if transport == "gzip" else bytes
    at_limit = ParseLimits(max_decompressed_bytes=len(CASE))
    below = ParseLimits(max_decompressed_bytes=len(CASE) - 1)
    assert len(parse_report(wrap(CASE), limits=at_limit).results) == 1
    assert parse_error(wrap(CASE), limits=below).code == "decompressed-too-large"


def test_the_default_limit_accepts_a_plain_report_over_50_mib() -> None:
    # Before: plain over 50 MiB was `too-large` while the same gzipped passed up to 500 MiB.
    data = HEAD + (b"<!--" + b"p" * 1017 + b"-->\n") * (51 * 1024) + TAIL
    assert len(data) > 51 * MIB
    assert len(parse_report(data).results) == 1
    assert len(parse_report(gzip.compress(data, 1)).results) == 1


def _zip(name: str, payload: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, payload)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (gzip.compress(gzip.compress(CASE)), "nested-compression"),
        (gzip.compress(_zip("r.xml", CASE)), "nested-compression"),
        (_zip("r.xml", CASE), "zip-not-supported"),
        (bz2.compress(CASE), "compression-not-supported"),
        (lzma.compress(CASE), "compression-not-supported"),
    ],
    ids=["gzip-in-gzip", "zip-in-gzip", "zip", "bzip2", "xz"],
)
def test_containers_get_their_own_code_not_durations_missing(data: bytes, code: str) -> None:
    assert parse_error(data).code == code


@pytest.mark.parametrize("fmt", ["durations", "laptime-json", "junit"])
def test_nested_compression_is_named_whatever_the_format_asked(fmt: str) -> None:
    assert parse_error(gzip.compress(gzip.compress(CASE)), format=fmt).code == (
        "nested-compression"
    )


@pytest.mark.parametrize("transport", ["plain", "gzip"])
def test_leading_blanks_do_not_hide_the_document_from_the_guard(transport: str) -> None:
    wrap = gzip.compress if transport == "gzip" else bytes
    # The blanks fill more than the first 1 MiB chunk; the comment holds "<" all along.
    limits = ParseLimits(max_node_bytes=4 * MIB)
    hostile = b"\n" * (MIB + 100) + HEAD + b"<!--" + b"<x>" * (2 * MIB) + b"-->" + TAIL
    error = parse_error(wrap(hostile), limits=limits)
    assert error.code == "node-too-large"
    assert "comment" in error.message
    # Leading blanks (under the cap) before a valid report are fine.
    assert len(parse_report(wrap(b"\n" * 5000 + CASE), limits=limits).results) == 1
