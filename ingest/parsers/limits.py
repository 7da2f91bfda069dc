"""Size limits on uploaded reports, and gunzip that enforces them while it streams."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from ingest.model import ReportParseError

MIB = 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"
# Decompress in bounded steps so a bomb never allocates more than one step past the limit.
_CHUNK_BYTES = 4 * MIB


@dataclass(frozen=True)
class ParseLimits:
    """How large a report may be, before and after gunzip."""

    max_compressed_bytes: int = 50 * MIB
    max_decompressed_bytes: int = 500 * MIB


DEFAULT_LIMITS = ParseLimits()


def check_compressed_size(data: bytes, limits: ParseLimits, filename: str | None) -> None:
    """Refuse input larger than the compressed-size limit (checked before any work)."""
    if len(data) > limits.max_compressed_bytes:
        raise ReportParseError(
            "too-large",
            f"report is {len(data)} bytes, over the limit of {limits.max_compressed_bytes}",
            filename=filename,
        )


def is_gzip(data: bytes) -> bool:
    """True when the bytes start with the gzip magic number."""
    return data[:2] == GZIP_MAGIC


def gunzip_limited(data: bytes, limits: ParseLimits, filename: str | None) -> bytes:
    """Decompress a gzip stream (members concatenated), stopping at the decompressed limit."""
    limit = limits.max_decompressed_bytes
    out: list[bytes] = []
    total = 0
    rest = data
    try:
        while rest:
            # wbits 16+MAX_WBITS: gzip header and trailer, CRC checked by zlib.
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            pending = rest
            while True:
                chunk = inflater.decompress(pending, min(_CHUNK_BYTES, limit - total + 1))
                total += len(chunk)
                if total > limit:
                    raise ReportParseError(
                        "decompressed-too-large",
                        f"gzip content expands past the limit of {limit} bytes",
                        filename=filename,
                    )
                out.append(chunk)
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
    return b"".join(out)
