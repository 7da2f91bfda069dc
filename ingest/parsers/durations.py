"""Parser for pytest `--durations` text (pytest 3 to 9), found anywhere inside a CI log.

What the text carries: one row per (nodeid, phase) with a 2-decimal duration, slowest first.
Each nodeid becomes one result: setup_s/call_s/teardown_s from its phase rows and
duration_s = the sum of the phases that were printed. Phases under the `--durations-min`
threshold (0.005 s by default) and phases past the N of `--durations=N` are not printed, so
duration_s is a lower bound there and the report is partial (`ParsedReport.partial`).

Outcomes are NOT in durations output. Every result says "passed" and the report carries
OUTCOMES_UNKNOWN_WARNING: the job's JUnit file is the source of outcomes, and the ingest
merge takes outcomes from JUnit and phases from durations for the same nodeids.

Format history (pytest `_pytest/runner.py::pytest_terminal_summary`):
- header `slowest [N ]test durations` (< 6.0) or `slowest [N ]durations` (>= 6.0);
- row `"{d:.2f}s {when:<8} {nodeid}"`;
- hidden line: none (< 3.9), `(0.00 durations hidden.  Use -vv ...)` with a literal 0.00
  instead of a count (3.9 - 5.4), `(N durations < Xs hidden.  Use -vv ...)` (6.0+), the same
  without the hint when `--durations-min` is given explicitly (8.4+).
Every line may carry a CI prefix (GitHub Actions, Azure, GitLab or Jenkins Timestamper
timestamps, Bamboo's "build\t<date>\t" fields, indentation): the header's prefix gives the
shape (digit, letter and blank runs may vary) that each row's prefix must have. ANSI escapes
are dropped and a lone carriage return ends a line (GitLab's section markers); lines holding
only the prefix may sit between the header and the rows (pytest 5 era). Every pattern is
possessive or a string operation, so a hostile log costs linear time.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from ingest.model import ParsedReport, ReportParseError, results_frame
from ingest.parsers.row_checks import durations_in_range, keep_named

__all__ = [
    "LEGACY_HIDDEN_THRESHOLD_S",
    "OUTCOMES_UNKNOWN_WARNING",
    "PHASES",
    "parse_durations",
    "split_nodeids",
]

PHASES: tuple[str, ...] = ("setup", "call", "teardown")
_PHASE_LETTERS = "sct"
OUTCOMES_UNKNOWN_WARNING = (
    "durations output has no outcomes: every result is marked 'passed'; "
    "upload the job's JUnit report too for real outcomes"
)
# pytest 3.9-5.4 hide phases under this fixed threshold but print "0.00" instead of a count.
LEGACY_HIDDEN_THRESHOLD_S = 0.005

# Searching for the literal title first keeps the scan of a long log fast; the "=" run and the
# CI prefix to its left are checked afterwards on that one line.
_TITLE_RE = re.compile(
    r"slowest (?:(?P<limit>\d+) )?(?:test )?durations =+[ \t]*$", re.MULTILINE | re.ASCII
)
# A CI prefix longer than this is not a log decoration but some other text ending in "= ".
_MAX_PREFIX_CHARS = 200
# ANSI escape sequences (colours, GitLab's "\e[0K" erase-line): CSI and two-byte escapes.
_ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*+[ -/]*+[@-~]|[@-Z\\-_])")
_PREFIX_TOKEN_RE = re.compile(r"\d+|[A-Za-z]+|[ \t]+|.", re.DOTALL | re.ASCII)
_HIDDEN_BODY = (
    r"[ \t]*\((?P<count>\d+(?:\.\d+)?) durations?"
    r"(?: < (?P<threshold>\d+(?:\.\d*)?(?:e[-+]?\d+)?)s)? hidden\."
)
# Each nodeid on its own line: "file::Class::" head, function, params (None without brackets).
# Splitting (not findall) returns one flat list, cheap to slice; heads repeat, so they are cut
# into file and classname once per distinct head.
_NODEID_RE = re.compile(r"\n((?:[^\n\[:]*::)*)([^\n\[:]*)(?:\[([^\n]*)\])?(?=\n)")


def _prefix_pattern(prefix: str) -> str:
    """A regex for CI prefixes shaped like `prefix`: digit, letter and blank runs may vary."""
    if not prefix.strip():
        return ""  # indentation only: the row pattern allows leading blanks anyway
    parts: list[str] = []
    for token in _PREFIX_TOKEN_RE.findall(prefix):
        # Possessive: the classes do not overlap, so nothing is lost and nothing backtracks.
        if token[0].isdigit():
            parts.append(r"\d++")
        elif token[0].isalpha():
            parts.append(r"[A-Za-z]++")
        elif token[0] in " \t":
            parts.append(r"[ \t]*+")  # CI logs often strip trailing blanks
        else:
            parts.append(re.escape(token))
    return "".join(parts)


@lru_cache(maxsize=64)
def _section_patterns(
    prefix_re: str,
) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(row splitter, hidden-line matcher, blank-lines matcher) for one prefix shape."""
    # Splitting on "newline + prefix + duration + phase" leaves the nodeids as the pieces in
    # between: one C-level pass, and the literal "\n" lets the engine skip along the text.
    # The phase is captured by its first letter: one-character strings are shared objects.
    rows = re.compile(
        rf"\n{prefix_re}[ \t]*+(\d++\.\d++)s[ \t]++([sct])(?:etup|all|eardown)[ \t]++",
        re.ASCII,
    )
    # Lines holding only the prefix: between the header and the rows (pytest 5 era), and
    # before the hidden line.
    blanks = rf"(?:\n{prefix_re}[ \t]*+(?=\n))*+"
    hidden = re.compile(rf"{blanks}\n{prefix_re}{_HIDDEN_BODY}", re.ASCII)
    return rows, hidden, re.compile(blanks, re.ASCII)


def split_nodeids(nodeids: list[str]) -> pd.DataFrame:
    """Split pytest nodeids into file, classname, function and params columns.

    file is the part before the first `::`, classname the middle segments joined by `::`
    (None when there are none), function the last segment without its `[...]` id, params the
    bracket content (None when absent). A bare path (no `::`) is both file and function.
    """
    n = len(nodeids)
    pieces = _NODEID_RE.split("\n" + "\n".join(nodeids) + "\n") if n else []
    if len(pieces) == 4 * n + 1 and pieces[-1] == "\n" and not any(pieces[0:-1:4]):
        head = np.array(pieces[1::4], dtype=object)
        func = np.array(pieces[2::4], dtype=object)
        params = np.array(pieces[3::4], dtype=object)
    else:  # some id the regex cannot cut (a newline, a single colon, odd brackets)
        found = [_split_one(nodeid) for nodeid in nodeids]
        head, func, params = (np.array([r[i] for r in found], dtype=object) for i in range(3))
    codes, heads = pd.factorize(head)
    files = np.empty(len(heads), dtype=object)
    classes = np.empty(len(heads), dtype=object)
    for i, text in enumerate(heads):  # once per distinct "file::Class::", not per test
        file, _, cls = text[:-2].partition("::")
        files[i], classes[i] = file, cls or None
    file_of = files[codes]
    return pd.DataFrame(
        {
            # A bare path has no "::" head: it is its own file.
            "file": pd.Series(np.where(file_of == "", func, file_of), dtype=object),
            "classname": pd.Series(classes[codes], dtype=object),
            "function": pd.Series(func, dtype=object),
            "params": pd.Series(params, dtype=object),
        }
    )


def _split_one(nodeid: str) -> tuple[str, str, str | None]:
    """The slow path of split_nodeids for one id: ("file::Class::" head, function, params)."""
    base, params = nodeid, None
    if nodeid.endswith("]") and "[" in nodeid:
        base, _, rest = nodeid.partition("[")
        params = rest[:-1]
    head, sep, func = base.rpartition("::")
    return head + sep, func, params


def parse_durations(data: bytes, *, filename: str | None = None) -> ParsedReport:
    """Parse every pytest `--durations` section found in `data` into a ParsedReport."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)  # colours and GitLab's erase-line codes
    if "\r" in text:
        # A lone "\r" ends a line too (GitLab's "section_start:...\r", progress output).
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")  # NUL is the piece separator used below
    headers = _find_headers(text)
    if not headers:
        raise ReportParseError(
            "durations-missing",
            "no pytest --durations section found (looked for a '= slowest durations =' "
            "header); run pytest with --durations=0",
            filename=filename,
        )
    sections: list[tuple[list[str], list[str], list[str]]] = []
    warnings: list[str] = []
    hidden_rows: int | None = None
    hidden_threshold_s: float | None = None
    hidden_unknown = False
    for number, (prefix, limit, start, stop) in enumerate(headers, start=1):
        rows_re, hidden_re, blanks_re = _section_patterns(_prefix_pattern(prefix))
        section = text[start:stop]
        blank = blanks_re.match(section)
        if blank is not None and blank.end():
            section = section[blank.end() :]
        sec_durations, sec_phases, sec_ids, after = _section_rows(rows_re, section)
        sections.append((sec_durations, sec_phases, sec_ids))
        hidden = hidden_re.match(after)
        count: int | None = None
        if hidden:
            if "." in hidden["count"]:
                hidden_unknown = True  # pytest 3.9-5.4: the literal "0.00", not a count
                threshold = LEGACY_HIDDEN_THRESHOLD_S
            else:
                count = int(hidden["count"])
                hidden_rows = (hidden_rows or 0) + count
                threshold = float(hidden["threshold"] or LEGACY_HIDDEN_THRESHOLD_S)
            hidden_threshold_s = max(hidden_threshold_s or 0.0, threshold)
        if limit is not None and len(sec_ids) + (count or 0) >= limit:
            # pytest cut the list at N before hiding: phases past the N-th are not counted.
            hidden_unknown = True
            warnings.append(
                f"durations section {number} lists only the slowest {limit} phases; "
                "the rest of the run is not in the report (use --durations=0)"
            )
    if len(sections) == 1:
        durations, phases, nodeids = sections[0]
    else:
        durations, phases, nodeids = (
            [r for section in sections for r in section[i]] for i in range(3)
        )
    rows = keep_named(
        {"nodeid": nodeids, "duration": durations, "phase": phases},
        lambda row: f"row {nodeids[row]!r} ({durations[row]}s {phases[row]})",
        warnings,
    )
    seconds = durations_in_range(
        np.array(rows["duration"], dtype=np.float64), warnings, what="durations row time"
    )
    results, repeated = _results_from_rows(seconds, rows["phase"], rows["nodeid"])
    if repeated:
        warnings.append(
            f"{repeated} durations rows repeat a nodeid and phase (rerun attempts, e.g. "
            "pytest-rerunfailures): their times are summed into one result"
        )
    if results.empty:
        warnings.append("the durations section has no rows")
    warnings.append(OUTCOMES_UNKNOWN_WARNING)
    return ParsedReport(
        format="durations",
        results=results,
        warnings=warnings,
        hidden_rows=hidden_rows,
        hidden_threshold_s=hidden_threshold_s,
        hidden_rows_unknown=hidden_unknown,
    )


def _find_headers(text: str) -> list[tuple[str, int | None, int, int]]:
    """(prefix, N limit, section start, section stop) of every durations header in `text`."""
    found: list[tuple[str, int | None, int, int]] = []
    for title in _TITLE_RE.finditer(text):
        line_start = text.rfind("\n", 0, title.start()) + 1
        left = text[line_start : title.start()]
        if not left.endswith("= "):
            continue  # "slowest durations" in prose, not a pytest separator line
        # The prefix is what precedes the "=" run (a string operation: linear, no regex).
        prefix = left[:-1].rstrip("=")
        if len(prefix) > _MAX_PREFIX_CHARS:
            continue
        limit = int(title["limit"]) if title["limit"] else None
        found.append((prefix, limit, title.end(), line_start))
    if not found:
        return []
    # Each section runs from its header's end to the next header's line (or the end).
    stops = [line_start for _, _, _, line_start in found[1:]] + [len(text)]
    return [
        (prefix, limit, start, stop)
        for (prefix, limit, start, _), stop in zip(found, stops, strict=True)
    ]


def _section_rows(
    rows_re: re.Pattern[str], section: str
) -> tuple[list[str], list[str], list[str], str]:
    """(durations, phases, nodeids) of the rows right after a header, and the text after them.

    `section` starts with the newline that ends the header line.
    """
    pieces = rows_re.split(section)
    if pieces[0]:
        return [], [], [], section  # the line after the header is not a row
    durations, phases, ids = pieces[1::3], pieces[2::3], pieces[3::3]
    # The rows stop at the first piece holding a newline: the line after it is not a row.
    joined = "\x00".join(ids)
    trailing_blanks = " \x00" in joined or "\t\x00" in joined
    first_newline = joined.find("\n")
    after = ""
    if first_newline >= 0:
        last = joined.count("\x00", 0, first_newline)
        nodeid, _, rest = ids[last].partition("\n")
        after = "\n" + rest
        del durations[last + 1 :], phases[last + 1 :], ids[last + 1 :]
        ids[last] = nodeid
    if trailing_blanks or (ids and ids[-1].endswith((" ", "\t"))):
        ids = [nodeid.rstrip(" \t") for nodeid in ids]  # pasted logs with trailing blanks
    if "::()" in joined:
        # pytest < 4 could print class instances as `::()::`; today's ids have no `()` part.
        ids = [nodeid.replace("::()", "") for nodeid in ids]
    return durations, phases, ids, after


def _results_from_rows(
    seconds: np.ndarray[Any, np.dtype[np.float64]], phases: list[str], nodeids: list[str]
) -> tuple[pd.DataFrame, int]:
    """One result per nodeid from (duration, phase, nodeid) rows, plus the repeated-row count.

    A nodeid is unique in a pytest session, so a (nodeid, phase) printed again is another
    attempt (pytest-rerunfailures reports every attempt's phases): phase times are SUMMED,
    the machine paid for every attempt, and `attempts` is the most rows of any one phase.
    """
    codes, uniques = pd.factorize(np.array(nodeids, dtype=object))
    letter_codes, letters = pd.factorize(np.array(phases, dtype=object))
    phase_index = np.array([_PHASE_LETTERS.index(letter) for letter in letters], dtype=np.int64)
    phase_of_row = phase_index[letter_codes] if len(phases) else np.zeros(0, np.int64)
    n = len(uniques)
    key = codes.astype(np.int64) * len(PHASES) + phase_of_row
    # A row whose time is unknown (out of range) counts as an attempt but adds no time.
    timed = ~np.isnan(seconds)
    shape = (n, len(PHASES))
    sums = np.bincount(key, weights=np.where(timed, seconds, 0.0), minlength=shape[0] * shape[1])
    sums = sums.reshape(shape)
    counts = np.bincount(key, minlength=n * len(PHASES)).reshape(shape)
    repeated = int(len(key) - np.count_nonzero(counts))
    known = np.bincount(key, weights=timed, minlength=n * len(PHASES)).reshape(shape) > 0
    stacked = np.where(known, sums, np.nan).T if n else np.zeros((3, 0))
    columns = {f"{phase}_s": stacked[index] for index, phase in enumerate(PHASES)}
    total = np.where(known.any(axis=1), np.nansum(stacked, axis=0), np.nan) if n else np.zeros(0)
    attempts = counts.max(axis=1) if n else np.zeros(0, np.int64)
    # Each phase's last row is the last attempt's: its phases together are that attempt's time.
    _, last_reversed = np.unique(key[::-1], return_index=True)
    last_rows = len(key) - 1 - last_reversed
    last_phase = np.full(n * len(PHASES), np.nan)
    last_phase[key[last_rows]] = seconds[last_rows]
    last_attempt = np.nansum(last_phase.reshape(n, len(PHASES)), axis=1) if n else np.zeros(0)
    names = list(uniques)
    parts = split_nodeids(names)
    frame = results_frame(
        {
            "nodeid": names,
            "file": parts["file"].to_numpy(),
            "classname": parts["classname"].to_numpy(),
            "function": parts["function"].to_numpy(),
            "params": parts["params"].to_numpy(),
            "outcome": ["passed"] * n,
            "duration_s": total,
            "attempts": attempts,
            "last_attempt_s": np.where(attempts > 1, last_attempt, np.nan),
            **columns,
        }
    )
    return frame, repeated
