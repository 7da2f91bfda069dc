"""A whole XML report as an ElementTree, built by the same hardened expat the JUnit parser
uses: no DTD, no entity declarations, errors mapped to the shared codes with positions.

For the native .NET formats (NUnit, TRX), whose results are joined across the document
(TRX: results to definitions) and so are read as a tree rather than streamed into columns.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import NoReturn
from xml.parsers import expat

from ingest.model import ReportParseError
from ingest.parsers.junit import _prepare, _xml_error
from ingest.parsers.junit_expat import Forbidden


def strip_namespace(tag: str) -> str:
    """`{ns}Name` -> `Name` (TRX elements live in the TeamTest 2010 namespace)."""
    return tag.rsplit("}", 1)[-1]


def parse_tree(
    data: bytes, *, filename: str | None, roots: tuple[str, ...], kind: str
) -> ET.Element:
    """The document's root element; `roots` are the accepted root names (namespace-free)."""
    text, encoding, line_offset = _prepare(data, filename)
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate(encoding, "}")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.buffer_text = True

    def forbid_doctype(*_args: object) -> NoReturn:
        raise Forbidden("xml-dtd-forbidden", "DOCTYPE declarations are not allowed in test reports")

    def forbid_entity(*_args: object) -> NoReturn:
        raise Forbidden("xml-entity-forbidden", "entity declarations are not allowed")

    first = True

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal first
        if first:
            first = False
            if strip_namespace(name) not in roots:
                raise Forbidden(
                    "not-junit", f"root element is <{strip_namespace(name)}>, not {kind}"
                )
        builder.start(name, attrs)

    parser.StartDoctypeDeclHandler = forbid_doctype
    parser.EntityDeclHandler = forbid_entity
    parser.UnparsedEntityDeclHandler = forbid_entity
    parser.ExternalEntityRefHandler = forbid_entity
    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        try:
            parser.Parse(text, False)
        except expat.ExpatError as exc:
            raise _xml_error(exc, text, encoding, line_offset, filename, at_end=False) from None
        try:
            parser.Parse(b"", True)
        except expat.ExpatError as exc:
            raise _xml_error(exc, text, encoding, line_offset, filename, at_end=True) from None
    except Forbidden as exc:
        raise ReportParseError(
            exc.code,
            exc.message,
            filename=filename,
            line=parser.CurrentLineNumber + line_offset,
            column=parser.CurrentColumnNumber + 1,
        ) from None
    return builder.close()
