"""Report parsers: bytes in, ParsedReport out. Pure; hostile input raises ReportParseError.

The helper that owns the parsers fills this in; the public entry points are fixed:
`parse_report(data, *, filename=None, format="auto", limits=DEFAULT_LIMITS) -> ParsedReport`
and `detect_format(data) -> ReportFormat`.
"""
