"""A cell's series detector states in Postgres: a snapshot plus a log, and a memory of them.

Rewriting every series' window after each upload would write megabytes per upload (120 runs x
10,000 series). Instead an upload appends one log row (the rows its points went to, their
durations, the anchors its changes moved) and every SNAPSHOT_EVERY uploads the whole table is
rewritten as the snapshot. A worker keeps the cells it pushed last in memory, valid while the
cell's newest log row is the one it wrote (its random token); otherwise it reads the snapshot
and replays the log after it. Callers hold the cell's advisory lock.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg

from analysis.changes import DetectionSettings
from analysis.changes.table import SeriesTable

SNAPSHOT_EVERY = 32
# Series rows kept in memory per worker (a row's arrays take about 4 kB).
CACHE_ROWS = 20_000


@dataclass
class CellStates:
    """A cell's series table and the (kind, key) of each row, at log position `seq`."""

    table: SeriesTable
    kinds: list[str]
    keys: list[str]
    seq: int
    token: uuid.UUID | None
    snapshot_seq: int
    rows: dict[tuple[str, str], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.rows:
            self.rows = {k: i for i, k in enumerate(zip(self.kinds, self.keys, strict=True))}

    def rows_of(self, kinds: Sequence[str], keys: Sequence[str]) -> np.ndarray:
        """The table rows of these series, adding rows for new ones."""
        rows = np.empty(len(kinds), dtype=np.int64)
        fresh: list[tuple[str, str]] = []
        for i, key in enumerate(zip(kinds, keys, strict=True)):
            row = self.rows.get(key)
            if row is None:
                row = len(self.kinds) + len(fresh)
                self.rows[key] = row
                fresh.append(key)
            rows[i] = row
        if fresh:
            self.kinds.extend(k for k, _ in fresh)
            self.keys.extend(k for _, k in fresh)
            self.table = self.table.grown(len(fresh))
        return rows


_CACHE: OrderedDict[int, CellStates] = OrderedDict()


def forget_all() -> None:
    """Drop every cell's states from memory (what another worker holds: nothing)."""
    _CACHE.clear()


def forget(cell_id: int) -> None:
    """Drop a cell's states from memory (after a failed push: they may be half-updated)."""
    _CACHE.pop(cell_id, None)


def load_cell(
    conn: psycopg.Connection[Any], cell_id: int, settings: DetectionSettings
) -> CellStates:
    """The cell's states as of its newest log row: from memory when still current."""
    latest = conn.execute(
        "SELECT seq, token FROM change_log WHERE cell_id = %s ORDER BY seq DESC LIMIT 1",
        (cell_id,),
    ).fetchone()
    cached = _CACHE.get(cell_id)
    if (
        cached is not None
        and latest is not None
        and (cached.seq, cached.token) == (int(latest[0]), latest[1])
        and cached.table.settings == settings
    ):
        _CACHE.move_to_end(cell_id)
        return cached
    forget(cell_id)
    return _read_cell(conn, cell_id, settings)


def _read_cell(
    conn: psycopg.Connection[Any], cell_id: int, settings: DetectionSettings
) -> CellStates:
    snap = (
        conn.cursor(binary=True)
        .execute(
            "SELECT seq, kinds, keys, count, anchor, durations, run_ids FROM change_state "
            "WHERE cell_id = %s",
            (cell_id,),
        )
        .fetchone()
    )
    width = settings.window
    if snap is None:
        states = CellStates(SeriesTable(0, settings), [], [], 0, None, 0)
    else:
        seq, kinds, keys, count, anchor, durations, run_ids = snap
        n = len(kinds)
        table = SeriesTable.restore(
            np.frombuffer(count, dtype="<i8"),
            np.frombuffer(anchor, dtype="<i8"),
            np.frombuffer(durations, dtype="<f8").reshape(n, width),
            np.frombuffer(run_ids, dtype="<i8").reshape(n, width),
            settings,
        )
        states = CellStates(table, list(kinds), list(keys), int(seq), None, int(seq))
    logs = (
        conn.cursor(binary=True)
        .execute(
            "SELECT seq, token, run_id, new_kinds, new_keys, rows, durations, moved_rows, "
            "moved_to FROM change_log WHERE cell_id = %s AND seq > %s ORDER BY seq",
            (cell_id, states.seq),
        )
        .fetchall()
    )
    for seq, token, run_id, new_kinds, new_keys, rows, durations, moved, moved_to in logs:
        states.rows_of(new_kinds, new_keys)
        states.table.replay(
            np.frombuffer(rows, dtype="<i8").astype(np.int64),
            np.frombuffer(durations, dtype="<f8"),
            int(run_id),
            np.frombuffer(moved, dtype="<i8").astype(np.int64),
            np.frombuffer(moved_to, dtype="<i8").astype(np.int64),
        )
        states.seq, states.token = int(seq), token
    return states


def save_push(
    conn: psycopg.Connection[Any],
    *,
    project_id: int,
    cell_id: int,
    states: CellStates,
    first_new: int,
    run_id: int,
    rows: np.ndarray,
    durations: np.ndarray,
    moved: np.ndarray,
) -> None:
    """Log one push (and rewrite the snapshot when due); remember the states as current."""
    table = states.table
    seq, token = states.seq + 1, uuid.uuid4()
    conn.cursor(binary=True).execute(
        "INSERT INTO change_log (cell_id, seq, token, run_id, new_kinds, new_keys, rows, "
        "durations, moved_rows, moved_to) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            cell_id, seq, token, run_id, states.kinds[first_new:], states.keys[first_new:],
            rows.astype("<i8").tobytes(), durations.astype("<f8").tobytes(),
            moved.astype("<i8").tobytes(), table.anchor[moved].astype("<i8").tobytes(),
        ),
    )  # fmt: skip
    states.seq, states.token = seq, token
    if seq - states.snapshot_seq >= SNAPSHOT_EVERY:
        _write_snapshot(conn, project_id, cell_id, states)
    _remember(cell_id, states)


def _write_snapshot(
    conn: psycopg.Connection[Any], project_id: int, cell_id: int, states: CellStates
) -> None:
    table = states.table
    conn.cursor(binary=True).execute(
        """
        INSERT INTO change_state (cell_id, project_id, seq, kinds, keys, count, anchor,
            durations, run_ids) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
        ON CONFLICT (cell_id) DO UPDATE SET seq = excluded.seq, kinds = excluded.kinds,
            keys = excluded.keys, count = excluded.count, anchor = excluded.anchor,
            durations = excluded.durations, run_ids = excluded.run_ids
        """,
        (
            cell_id, project_id, states.seq, states.kinds, states.keys,
            table.count.astype("<i8").tobytes(), table.anchor.astype("<i8").tobytes(),
            table.duration_s.astype("<f8").tobytes(), table.run_id.astype("<i8").tobytes(),
        ),
    )  # fmt: skip
    # The newest log row stays: its token tells workers whether their memory is current.
    conn.execute("DELETE FROM change_log WHERE cell_id = %s AND seq < %s", (cell_id, states.seq))
    states.snapshot_seq = states.seq


def _remember(cell_id: int, states: CellStates) -> None:
    _CACHE[cell_id] = states
    _CACHE.move_to_end(cell_id)
    while len(_CACHE) > 1 and sum(len(s.kinds) for s in _CACHE.values()) > CACHE_ROWS:
        _CACHE.popitem(last=False)
