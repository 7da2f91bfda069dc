"""Registry of every ReportParseError code: code -> one-line description.

Codes are a stable contract (stored on failed uploads, matched by scripts); every code here
is documented in docs/errors.md and a test fails when one is raised but not registered.
Parser owners append their own codes below.
"""

from __future__ import annotations

ERROR_CODES: dict[str, str] = {
    # Generic (any format)
    "empty-report": "the file is empty or only whitespace",
    "too-large": "retired: the upload was larger than a compressed-size limit (older uploads)",
    "decompressed-too-large": "the report's content (plain or gunzipped) is over the size limit",
    "gzip-invalid": "the file starts with the gzip magic but is not a valid gzip stream",
    "nested-compression": "the gzip stream holds another compressed file (gzip, zip, xz...)",
    "zip-not-supported": "the file is a zip archive; reports are read plain or gzipped",
    "compression-not-supported": "the file is bzip2, xz, zstd or 7z compressed",
    "format-unknown": "the format could not be detected, or an unknown format was requested",
    "runner-unknown": "an unknown test runner was named (--runner or the upload's runner field)",
    # XML / JUnit
    "xml-malformed": "the XML is not well-formed",
    "xml-truncated": "the XML ends before its root element is closed",
    "xml-dtd-forbidden": "the XML has a DOCTYPE; DTDs are refused (entity expansion, XXE)",
    "xml-entity-forbidden": "the XML declares or references an entity that is not predefined",
    "encoding-invalid": "the bytes are not valid in the declared (or default UTF-8) encoding",
    "not-junit": "well-formed XML whose root is not a known report's (JUnit, NUnit, TRX)",
    "node-too-large": "one XML text run, tag, comment, CDATA section or PI is over the node limit",
    # pytest --durations text
    "durations-missing": "no pytest --durations section found in the text",
    # laptime JSON
    "json-malformed": "the laptime JSON report is not valid JSON",
    "json-schema": "the laptime JSON report does not match the schema (a field missing or wrong)",
    "json-version": "the laptime JSON report version is newer than this laptime understands",
}
