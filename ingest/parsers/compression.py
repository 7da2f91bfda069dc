"""Transport compression of reports: gzip inflated as a stream, other containers named.

A report is plain bytes or one gzip stream (members concatenated). Inflation yields bounded
chunks and stops one chunk past the decompressed-size limit, so a bomb never expands in
memory. What gzip does not cover gets its own error code instead of being mistaken for
`--durations` text: a gzip inside the gzip (`nested-compression`), a zip archive
(`zip-not-supported`) and bzip2/xz/zstd/7z (`compression-not-supported`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from ingest.model import ReportParseError

GZIP_MAGIC = b"\x1f\x8b"
# Local file header, empty archive and spanned archive: every zip file starts with one.
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
OTHER_MAGICS = {
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"7z\xbc\xaf\x27\x1c": "7z",
}
# Inflate in bounded steps so a bomb never allocates more than one step past the limit.
CHUNK_BYTES = 1 << 20


def is_gzip(data: bytes) -> bool:
    """True when the bytes start with the gzip magic number."""
    return data[:2] == GZIP_MAGIC


def refuse_containers(head: bytes, filename: str | None, *, inside_gzip: bool) -> None:
    """Raise the precise code when `head` starts a container the parsers do not open."""
    if inside_gzip and (is_gzip(head) or head.startswith(ZIP_MAGICS + tuple(OTHER_MAGICS))):
        raise ReportParseError(
            "nested-compression",
            "the gzip stream holds another compressed file; compress the report once",
            filename=filename,
        )
    if head.startswith(ZIP_MAGICS):
        raise ReportParseError(
            "zip-not-supported",
            "zip archives are not read; upload each report inside it (gzip is accepted)",
            filename=filename,
        )
    for magic, name in OTHER_MAGICS.items():
        if head.startswith(magic):
            raise ReportParseError(
                "compression-not-supported",
                f"{name} compression is not read; upload the report plain or gzipped",
                filename=filename,
            )


def check_plain_size(data: bytes, limit: int, filename: str | None) -> None:
    """Refuse an uncompressed report over the content limit (the one gzip is held to)."""
    if len(data) > limit:
        raise _too_large(limit, filename)


def plain_chunks(data: bytes) -> Iterator[bytes]:
    """An uncompressed report in CHUNK_BYTES slices, the steps gzip content comes in."""
    view = memoryview(data)
    for start in range(0, len(data), CHUNK_BYTES):
        yield bytes(view[start : start + CHUNK_BYTES])


def gunzip_chunks(data: bytes, limit: int, filename: str | None) -> Iterator[bytes]:
    """Inflate a gzip stream (members concatenated) chunk by chunk, stopping past `limit`."""
    total = 0
    rest = data
    try:
        while rest:
            # wbits 16+MAX_WBITS: gzip header and trailer, CRC checked by zlib.
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            pending = rest
            while True:
                chunk = inflater.decompress(pending, min(CHUNK_BYTES, limit - total + 1))
                total += len(chunk)
                if total > limit:
                    raise _too_large(limit, filename)
                if chunk:
                    yield chunk
                pending = inflater.unconsumed_tail
                if inflater.eof or not (pending or chunk):
                    break
            if not inflater.eof:
                raise ReportParseError(
                    "gzip-invalid", "gzip stream is truncated", filename=filename
                )
            rest = inflater.unused_data
            # Some writers pad the end of the file with zero bytes; only another member counts.
            if not is_gzip(rest):
                rest = b""
    except zlib.error as exc:
        raise ReportParseError(
            "gzip-invalid", f"not a valid gzip stream: {exc}", filename=filename
        ) from None


def _too_large(limit: int, filename: str | None) -> ReportParseError:
    return ReportParseError(
        "decompressed-too-large",
        f"the report's content is larger than the limit of {limit} bytes "
        "(the same limit applies plain or gzipped)",
        filename=filename,
    )
