"""A whole XML report as an ElementTree, built by the same hardened expat the JUnit parser
uses: no DTD, no entity declarations, errors mapped to the shared codes with positions.

For the native .NET formats (NUnit, TRX), whose results are joined across the document
(TRX: results to definitions) and so are read as a tree rather than streamed into columns.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ingest.parsers.junit import prepare_xml, run_expat
from ingest.parsers.junit_expat import Forbidden, hardened_parser


def strip_namespace(tag: str) -> str:
    """`{ns}Name` -> `Name` (TRX elements live in the TeamTest 2010 namespace)."""
    return tag.rsplit("}", 1)[-1]


def parse_tree(
    data: bytes, *, filename: str | None, roots: tuple[str, ...], kind: str
) -> ET.Element:
    """The document's root element; `roots` are the accepted root names (namespace-free)."""
    text, encoding, line_offset = prepare_xml(data, filename)
    builder = ET.TreeBuilder()
    parser = hardened_parser(encoding, "}")
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

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    run_expat(parser, text, encoding, line_offset, filename)
    return builder.close()
