"""Queue mode's tables (`work_queue*`): items claimed in leased batches with
`FOR UPDATE SKIP LOCKED`, every claim, start, finish and measured duration recorded.

Why one module (about 660 lines): every statement on the `work_queue*` tables, so the lock
order the transitions rely on (queue row, claim row, items) and the columns each statement
touches can be read in one place; the transitions are app/services/queues.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

# Queues older than this are gone: a pipeline's nodes run within hours, not weeks.
QUEUE_DAYS = 14
# Most pending items one claim looks at (and locks): a batch is never larger.
CLAIM_WINDOW = 500
# A sibling that finished a claim this recently still counts as live (it is claiming again).
LIVE_S = 30.0


@dataclass(frozen=True)
class QueueRow:
    """A queue as stored."""

    id: int
    pipeline: str
    attempt: int
    collected: str
    nodes: int
    runner: str
    error: float
    created_at: Any


@dataclass(frozen=True)
class ItemRow:
    """A work item as stored."""

    position: int
    name: str
    unit: str
    nodeids: tuple[str, ...]
    estimated: tuple[str, ...]
    predicted_s: float


_QUEUE_COLUMNS = "id, pipeline, attempt, collected, nodes, runner, error, created_at"


def _queue(row: Any) -> QueueRow:
    return QueueRow(
        int(row[0]), str(row[1]), int(row[2]), str(row[3]), int(row[4]), str(row[5]),
        float(row[6]), row[7],
    )  # fmt: skip


def load_queue(conn: Connection, project_id: int, queue_id: int) -> QueueRow | None:
    """The project's queue `queue_id`."""
    row = conn.execute(
        text(f"SELECT {_QUEUE_COLUMNS} FROM work_queue WHERE project_id = :p AND id = :q"),
        {"p": project_id, "q": queue_id},
    ).first()
    return None if row is None else _queue(row)


def find_queue(conn: Connection, project_id: int, pipeline: str) -> QueueRow | None:
    """The queue of a pipeline."""
    row = conn.execute(
        text(f"SELECT {_QUEUE_COLUMNS} FROM work_queue WHERE project_id = :p AND pipeline = :pl"),
        {"p": project_id, "pl": pipeline},
    ).first()
    return None if row is None else _queue(row)


def recent_queues(conn: Connection, project_id: int, limit: int = 50) -> list[QueueRow]:
    """The project's newest queues."""
    rows = conn.execute(
        text(
            f"SELECT {_QUEUE_COLUMNS} FROM work_queue WHERE project_id = :p"
            " ORDER BY created_at DESC, id DESC LIMIT :n"
        ),
        {"p": project_id, "n": limit},
    ).all()
    return [_queue(r) for r in rows]


def create_queue(
    conn: Connection,
    project_id: int,
    *,
    pipeline: str,
    attempt: int,
    collected: str,
    nodes: int,
    runner: str,
    error: float,
    items: Sequence[ItemRow],
) -> QueueRow | None:
    """Insert a queue and its items; None when a sibling node opened it first (this INSERT
    waited for that one's commit)."""
    row = conn.execute(
        text(
            "INSERT INTO work_queue"
            " (project_id, pipeline, attempt, collected, nodes, runner, error)"
            " VALUES (:p, :pl, :a, :c, :n, :r, :e)"
            " ON CONFLICT (project_id, pipeline) DO NOTHING"
            f" RETURNING {_QUEUE_COLUMNS}"
        ),
        {"p": project_id, "pl": pipeline, "a": attempt, "c": collected, "n": nodes,
         "r": runner, "e": error},
    ).first()  # fmt: skip
    if row is None:
        return None
    queue = _queue(row)
    if items:
        conn.execute(
            text(
                "INSERT INTO work_queue_item"
                " (queue_id, position, name, unit, nodeids, estimated, predicted_s)"
                " VALUES (:q, :pos, :name, :unit, :nodeids, :estimated, :s)"
            ),
            [
                {"q": queue.id, "pos": i.position, "name": i.name, "unit": i.unit,
                 "nodeids": list(i.nodeids), "estimated": list(i.estimated),
                 "s": i.predicted_s}
                for i in items
            ],
        )  # fmt: skip
    conn.execute(
        text(
            "DELETE FROM work_queue WHERE project_id = :p"
            " AND created_at < now() - make_interval(days => :days)"
        ),
        {"p": project_id, "days": QUEUE_DAYS},
    )
    return queue


def queue_nodeids(conn: Connection, queue_id: int) -> list[tuple[str, str]]:
    """Every (nodeid, unit) of the queue."""
    rows = conn.execute(
        text("SELECT unnest(nodeids), unit FROM work_queue_item WHERE queue_id = :q"),
        {"q": queue_id},
    ).all()
    return [(str(r[0]), str(r[1])) for r in rows]


def estimated_nodeids(conn: Connection, queue_id: int) -> list[str]:
    """The queue's nodeids placed by an estimate (no history), sorted."""
    rows = conn.execute(
        text(
            "SELECT n FROM work_queue_item, unnest(estimated) AS n WHERE queue_id = :q ORDER BY n"
        ),
        {"q": queue_id},
    ).all()
    return [str(r[0]) for r in rows]


def record_event(
    conn: Connection,
    queue_id: int,
    node: str,
    attempt: int,
    kind: str,
    *,
    claim_id: int | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Append one event to the queue's log."""
    conn.execute(
        text(
            "INSERT INTO work_queue_event (queue_id, claim_id, node, attempt, kind, detail)"
            " VALUES (:q, :c, :n, :a, :k, CAST(:d AS jsonb))"
        ),
        {"q": queue_id, "c": claim_id, "n": node, "a": attempt, "k": kind,
         "d": json.dumps(detail or {}, allow_nan=False)},
    )  # fmt: skip


def reserve_replay(conn: Connection, queue_id: int, node: str, attempt: int) -> int:
    """A retried job (`node`, later `attempt`): what the node's earlier attempts ran or held
    goes back to the queue reserved for it; how many items. Done once per attempt."""
    done = conn.execute(
        text(
            "SELECT 1 FROM work_queue_event WHERE queue_id = :q AND node = :n"
            " AND attempt = :a AND kind = 'replay'"
        ),
        {"q": queue_id, "n": node, "a": attempt},
    ).first()
    if done is not None:
        return 0
    conn.execute(
        text(
            "UPDATE work_queue_claim SET state = 'expired' WHERE queue_id = :q AND node = :n"
            " AND attempt < :a AND state = 'open'"
        ),
        {"q": queue_id, "n": node, "a": attempt},
    )
    count = conn.execute(
        text(
            "UPDATE work_queue_item SET state = 'pending', claim_id = NULL, reserved_for = :n"
            " WHERE queue_id = :q AND claim_id IN (SELECT id FROM work_queue_claim"
            "   WHERE queue_id = :q AND node = :n AND attempt < :a)"
        ),
        {"q": queue_id, "n": node, "a": attempt},
    ).rowcount
    record_event(conn, queue_id, node, attempt, "replay", detail={"items": count})
    return int(count or 0)


@dataclass(frozen=True)
class PendingRow:
    """A pending item locked by this claim."""

    position: int
    predicted_s: float
    reserved: bool


def lock_pending(
    conn: Connection,
    queue_id: int,
    node: str,
    limit: int = CLAIM_WINDOW,
    *,
    reserved: bool,
    from_back: bool = False,
) -> list[PendingRow]:
    """The first `limit` pending items reserved for this node (its replay; `reserved`) or for
    nobody, locked; the ones sibling claims hold are skipped (`SKIP LOCKED`). Each lock writes
    its row, so a claim locks about what it will take, not the window. In queue order
    (`from_back`: lightest first, a probe), read along the pending index and stopped at
    `limit`: a claim does not sort the whole queue."""
    whose = "reserved_for = :n" if reserved else "reserved_for IS NULL"
    order = "position DESC" if from_back else "position"
    rows = conn.execute(
        text(
            "SELECT position, predicted_s, reserved_for IS NOT NULL FROM work_queue_item"
            f" WHERE queue_id = :q AND state = 'pending' AND {whose}"
            f" ORDER BY {order} LIMIT :lim FOR UPDATE SKIP LOCKED"
        ),
        {"q": queue_id, "n": node, "lim": min(limit, CLAIM_WINDOW)},
    ).all()
    return [PendingRow(int(r[0]), float(r[1]), bool(r[2])) for r in rows]


@dataclass(frozen=True)
class QueueTotals:
    """What a claim sizes against (predicted seconds; all read unlocked)."""

    pending_items: int  # pending that this node may take
    pending_s: float
    open_s: float  # nobody started it: pending, or claimed and not begun
    total_s: float  # the whole queue
    reserved_items: int = 0  # pending and reserved for this node (its replay)
    heaviest_s: float = 0.0  # the heaviest item pending that this node may take


@dataclass(frozen=True)
class ClaimContext:
    """What a claim starts from, read in one round trip."""

    queue: QueueRow
    totals: QueueTotals
    expired: int  # claims whose lease ran out, expired by this call
    claimed_before: bool = False  # this node has claimed in this queue (any attempt)
    # The latest declared pace of each live sibling (an open claim, or one finished within
    # LIVE_S): the nodes a slow node may leave heavy items to.
    sibling_paces: tuple[float, ...] = ()


def claim_context(
    conn: Connection, project_id: int, queue_id: int, node: str, *, paces: bool = True
) -> ClaimContext | None:
    """The project's queue `queue_id` (None: no such queue), its lapsed leases expired (their
    items pending again, an `expire` event each) and the totals a claim sizes against, in ONE
    statement: a claim's round trips are what the server's claim rate is made of. The totals
    see the queue as it was before the expiry; the freed items are added to them. Without
    `paces` (a claim that told no pace of its own) the siblings' paces are not read."""
    mine = "state = 'pending' AND (reserved_for IS NULL OR reserved_for = :n)"
    sibling_paces = "ARRAY(SELECT pace FROM paces)" if paces else "CAST('{}' AS float8[])"
    row = conn.execute(
        text(
            f"WITH q AS (SELECT {_QUEUE_COLUMNS} FROM work_queue"
            "   WHERE project_id = :p AND id = :q),"
            " gone AS (UPDATE work_queue_claim c SET state = 'expired' FROM q"
            "   WHERE c.queue_id = q.id AND c.state = 'open'"
            "   AND c.lease_until < clock_timestamp() RETURNING c.id, c.node, c.attempt),"
            " freed AS (UPDATE work_queue_item i SET state = 'pending', claim_id = NULL"
            "   FROM gone WHERE i.queue_id = :q AND i.claim_id = gone.id"
            "   AND i.state IN ('claimed', 'running') RETURNING i.predicted_s, i.reserved_for),"
            " logged AS (INSERT INTO work_queue_event (queue_id, claim_id, node, attempt, kind)"
            "   SELECT :q, id, node, attempt, 'expire' FROM gone RETURNING 1),"
            f" t AS (SELECT count(*) FILTER (WHERE {mine}) AS n,"
            f"   coalesce(sum(predicted_s) FILTER (WHERE {mine}), 0) AS s,"
            "   coalesce(sum(predicted_s) FILTER (WHERE state IN ('pending', 'claimed')), 0) AS o,"
            "   coalesce(sum(predicted_s), 0) AS total,"
            "   count(*) FILTER (WHERE state = 'pending' AND reserved_for = :n) AS r,"
            f"   coalesce(max(predicted_s) FILTER (WHERE {mine}), 0) AS h"
            "   FROM work_queue_item WHERE queue_id = :q),"
            " f AS (SELECT count(*) FILTER (WHERE reserved_for IS NULL OR reserved_for = :n) AS n,"
            "   coalesce(sum(predicted_s) FILTER"
            "     (WHERE reserved_for IS NULL OR reserved_for = :n), 0) AS s,"
            "   coalesce(sum(predicted_s), 0) AS o,"
            "   count(*) FILTER (WHERE reserved_for = :n) AS r,"
            "   coalesce(max(predicted_s) FILTER"
            "     (WHERE reserved_for IS NULL OR reserved_for = :n), 0) AS h FROM freed),"
            " paces AS (SELECT DISTINCT ON (node) pace FROM work_queue_claim"
            "   WHERE queue_id = :q AND node <> :n AND pace IS NOT NULL"
            "   AND (state = 'open'"
            "     OR finished_at > clock_timestamp() - make_interval(secs => :live))"
            "   ORDER BY node, id DESC)"
            f" SELECT {', '.join('q.' + c.strip() for c in _QUEUE_COLUMNS.split(','))},"
            " t.n + f.n, t.s + f.s, t.o + f.o, t.total, (SELECT count(*) FROM logged), t.r + f.r,"
            " greatest(t.h, f.h),"
            " EXISTS (SELECT 1 FROM work_queue_claim WHERE queue_id = :q AND node = :n),"
            f" {sibling_paces}"
            " FROM q, t, f"
        ),
        {"p": project_id, "q": queue_id, "n": node, "live": LIVE_S},
    ).first()
    if row is None:
        return None
    totals = QueueTotals(
        int(row[8]), float(row[9]), float(row[10]), float(row[11]),
        reserved_items=int(row[13]), heaviest_s=float(row[14]),
    )  # fmt: skip
    return ClaimContext(
        _queue(row[:8]), totals, int(row[12]), bool(row[15]), tuple(float(p) for p in row[16])
    )


def queue_totals(conn: Connection, queue_id: int, node: str) -> QueueTotals:
    """Items pending that `node` could take and their seconds; the seconds nobody has started;
    the queue's seconds. One scan of the queue's items."""
    mine = "state = 'pending' AND (reserved_for IS NULL OR reserved_for = :n)"
    row = conn.execute(
        text(
            f"SELECT count(*) FILTER (WHERE {mine}),"
            f" coalesce(sum(predicted_s) FILTER (WHERE {mine}), 0),"
            " coalesce(sum(predicted_s) FILTER (WHERE state IN ('pending', 'claimed')), 0),"
            " coalesce(sum(predicted_s), 0)"
            " FROM work_queue_item WHERE queue_id = :q"
        ),
        {"q": queue_id, "n": node},
    ).one()
    return QueueTotals(int(row[0]), float(row[1]), float(row[2]), float(row[3]))


def pending_count(conn: Connection, queue_id: int, *, as_of_now: bool = False) -> int:
    """Items pending for anyone (`as_of_now`: with those of lapsed leases, see load_claims)."""
    lapsed = (
        " OR (i.state IN ('claimed', 'running') AND EXISTS (SELECT 1 FROM work_queue_claim c"
        f" WHERE c.id = i.claim_id AND {_STATE_AS_OF_NOW} = 'expired'))"
        if as_of_now
        else ""
    )
    return int(
        conn.execute(
            text(
                "SELECT count(*) FROM work_queue_item i"
                f" WHERE i.queue_id = :q AND (i.state = 'pending'{lapsed})"
            ),
            {"q": queue_id},
        ).scalar_one()
    )


def open_claims_elsewhere(conn: Connection, queue_id: int, node: str) -> tuple[float, float] | None:
    """Other nodes' open claims: seconds until the soonest lease ends, and until the last is
    predicted to finish (from its start, its predicted seconds at its node's declared pace);
    None without one."""
    row = conn.execute(
        text(
            "SELECT extract(epoch FROM min(lease_until) - clock_timestamp()),"
            " extract(epoch FROM max(coalesce(started_at, claimed_at)"
            "   + make_interval(secs => predicted_s * coalesce(pace, 1))) - clock_timestamp())"
            " FROM work_queue_claim WHERE queue_id = :q AND state = 'open' AND node <> :n"
        ),
        {"q": queue_id, "n": node},
    ).one()
    return None if row[0] is None else (float(row[0]), float(row[1]))


def hand_out(
    conn: Connection,
    queue_id: int,
    *,
    node: str,
    attempt: int,
    positions: Sequence[int],
    started: Sequence[int],
    predicted_s: float,
    lease_s: float,
    replay: bool,
    kind: str,
    detail: dict[str, Any],
    pace: float | None = None,
) -> tuple[int, list[ItemRow]]:
    """insert_claim, its event and the items it holds, in ONE statement: (claim id, items in
    queue order). `pace`: what the node declared (see ClaimContext.sibling_paces)."""
    rows = conn.execute(
        text(
            "WITH c AS (INSERT INTO work_queue_claim (queue_id, node, attempt, replay, positions,"
            "   predicted_s, pace, lease_until, started_at) VALUES (:q, :n, :a, :r, :pos, :s,"
            "   :pace,"
            "   clock_timestamp() + make_interval(secs => :lease),"
            "   CASE WHEN cardinality(CAST(:run AS integer[])) > 0 THEN clock_timestamp() END)"
            "   RETURNING id),"
            " u AS (UPDATE work_queue_item i SET claim_id = c.id,"
            "   state = CASE WHEN i.position = ANY(:run) THEN 'running' ELSE 'claimed' END"
            "   FROM c WHERE i.queue_id = :q AND i.position = ANY(:pos)"
            "   RETURNING i.position, i.name, i.unit, i.nodeids, i.estimated, i.predicted_s),"
            " e AS (INSERT INTO work_queue_event (queue_id, claim_id, node, attempt, kind, detail)"
            "   SELECT :q, c.id, :n, :a, :k, CAST(:d AS jsonb) FROM c)"
            " SELECT c.id, u.* FROM c, u ORDER BY u.position"
        ),
        {"q": queue_id, "n": node, "a": attempt, "r": replay, "pos": list(positions),
         "s": predicted_s, "pace": pace, "lease": lease_s, "run": list(started), "k": kind,
         "d": json.dumps(detail, allow_nan=False)},
    ).all()  # fmt: skip
    items = [
        ItemRow(int(r[1]), str(r[2]), str(r[3]), tuple(r[4]), tuple(r[5]), float(r[6]))
        for r in rows
    ]
    return int(rows[0][0]), items


def lock_claim(conn: Connection, queue_id: int, claim_id: int) -> str | None:
    """The claim's state, its row locked. Every change to a claim's items locks the claim
    row first (start, finish, expiry, release, take-over): one lock order, no deadlock."""
    value = conn.execute(
        text("SELECT state FROM work_queue_claim WHERE queue_id = :q AND id = :c FOR UPDATE"),
        {"q": queue_id, "c": claim_id},
    ).scalar_one_or_none()
    return None if value is None else str(value)


def unstarted_items(conn: Connection, queue_id: int, claim_id: int) -> list[PendingRow]:
    """The claim's items not begun yet, in queue order (lock the claim first)."""
    rows = conn.execute(
        text(
            "SELECT position, predicted_s, reserved_for IS NOT NULL FROM work_queue_item"
            " WHERE queue_id = :q AND claim_id = :c AND state = 'claimed' ORDER BY position"
        ),
        {"q": queue_id, "c": claim_id},
    ).all()
    return [PendingRow(int(r[0]), float(r[1]), bool(r[2])) for r in rows]


def mark_running(
    conn: Connection, queue_id: int, claim_id: int, positions: Sequence[int]
) -> list[int]:
    """Begin the claim's items at `positions` that are still its own and not begun; the
    positions begun, in order."""
    rows = conn.execute(
        text(
            "UPDATE work_queue_item SET state = 'running' WHERE queue_id = :q AND claim_id = :c"
            " AND state = 'claimed' AND position = ANY(:pos) RETURNING position"
        ),
        {"q": queue_id, "c": claim_id, "pos": list(positions)},
    ).all()
    return sorted(int(r[0]) for r in rows)


def lock_victim(conn: Connection, queue_id: int, node: str) -> tuple[int, str] | None:
    """The open claim of another node with the most predicted seconds not begun (a replay's
    reserved items excepted), its row locked; (claim id, node). A claim another transaction
    holds is skipped (`SKIP LOCKED`): a take-over never waits."""
    row = conn.execute(
        text(
            "SELECT c.id, c.node FROM work_queue_claim c"
            " WHERE c.queue_id = :q AND c.state = 'open' AND c.node <> :n"
            " AND c.lease_until > clock_timestamp()"
            " AND EXISTS (SELECT 1 FROM work_queue_item i WHERE i.queue_id = :q"
            "   AND i.claim_id = c.id AND i.state = 'claimed' AND i.reserved_for IS NULL)"
            " ORDER BY (SELECT sum(i.predicted_s) FROM work_queue_item i WHERE i.queue_id = :q"
            "   AND i.claim_id = c.id AND i.state = 'claimed') DESC, c.id"
            " LIMIT 1 FOR UPDATE OF c SKIP LOCKED"
        ),
        {"q": queue_id, "n": node},
    ).first()
    return None if row is None else (int(row[0]), str(row[1]))


def drop_from_claim(
    conn: Connection, queue_id: int, claim_id: int, positions: Sequence[int], seconds: float
) -> None:
    """Items taken over by a sibling leave the claim (its record and its prediction)."""
    conn.execute(
        text(
            "UPDATE work_queue_claim SET predicted_s = greatest(predicted_s - :s, 0),"
            " positions = ARRAY(SELECT p FROM unnest(positions) AS p WHERE p <> ALL(:pos))"
            " WHERE queue_id = :q AND id = :c"
        ),
        {"q": queue_id, "c": claim_id, "pos": list(positions), "s": seconds},
    )


def items_at(conn: Connection, queue_id: int, positions: Sequence[int]) -> list[ItemRow]:
    """The items at `positions`, in queue order."""
    rows = conn.execute(
        text(
            "SELECT position, name, unit, nodeids, estimated, predicted_s FROM work_queue_item"
            " WHERE queue_id = :q AND position = ANY(:pos) ORDER BY position"
        ),
        {"q": queue_id, "pos": list(positions)},
    ).all()
    return [
        ItemRow(int(r[0]), str(r[1]), str(r[2]), tuple(r[3]), tuple(r[4]), float(r[5]))
        for r in rows
    ]


@dataclass(frozen=True)
class ClaimRecord:
    """A claim as stored (times as seconds since the queue opened)."""

    id: int
    node: str
    attempt: int
    state: str
    replay: bool
    positions: tuple[int, ...]
    predicted_s: float
    claimed_s: float
    started_s: float | None
    finished_s: float | None


# A read must not write (it may run on a read-only replica): a claim whose lease ran out but
# that no claim or finish has marked expired yet reads as expired, its items as pending.
_STATE_AS_OF_NOW = (
    "CASE WHEN c.state = 'open' AND c.lease_until < clock_timestamp() THEN 'expired'"
    " ELSE c.state END"
)


def load_claims(
    conn: Connection,
    queue_id: int,
    claim_id: int | None = None,
    *,
    as_of_now: bool = False,
    project_id: int | None = None,
) -> list[ClaimRecord]:
    """Every claim of the queue (or the one asked), oldest first; `as_of_now`: a lapsed lease
    reads as expired (for reports, which write nothing)."""
    state = _STATE_AS_OF_NOW if as_of_now else "c.state"
    rows = conn.execute(
        text(
            f"SELECT c.id, c.node, c.attempt, {state}, c.replay, c.positions, c.predicted_s,"
            " extract(epoch FROM c.claimed_at - q.created_at),"
            " extract(epoch FROM c.started_at - q.created_at),"
            " extract(epoch FROM c.finished_at - q.created_at)"
            " FROM work_queue_claim c JOIN work_queue q ON q.id = c.queue_id"
            " WHERE c.queue_id = :q AND (CAST(:c AS bigint) IS NULL OR c.id = :c)"
            " AND (CAST(:p AS bigint) IS NULL OR q.project_id = :p) ORDER BY c.id"
        ),
        {"q": queue_id, "c": claim_id, "p": project_id},
    ).all()
    return [_claim(r) for r in rows]


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)


def _claim(r: Any) -> ClaimRecord:
    positions = tuple(int(p) for p in r[5])
    return ClaimRecord(
        int(r[0]), str(r[1]), int(r[2]), str(r[3]), bool(r[4]), positions, float(r[6]),
        float(r[7]), _seconds(r[8]), _seconds(r[9]),
    )  # fmt: skip


def extend_leases(conn: Connection, queue_id: int, node: str, lease_s: float) -> int:
    """Push the lease of `node`'s open claims `lease_s` ahead; how many."""
    return int(
        conn.execute(
            text(
                "UPDATE work_queue_claim"
                " SET lease_until = clock_timestamp() + make_interval(secs => :lease)"
                " WHERE queue_id = :q AND node = :n AND state = 'open'"
            ),
            {"q": queue_id, "n": node, "lease": lease_s},
        ).rowcount
        or 0
    )


def mark_started(conn: Connection, queue_id: int, claim_id: int) -> None:
    """The node began running the claim."""
    conn.execute(
        text(
            "UPDATE work_queue_claim SET started_at = coalesce(started_at, clock_timestamp())"
            " WHERE queue_id = :q AND id = :c"
        ),
        {"q": queue_id, "c": claim_id},
    )


def finish_claim(
    conn: Connection,
    queue_id: int,
    claim: ClaimRecord,
    results: Sequence[tuple[str, float | None, str | None]],
    done: Sequence[int],
    detail: dict[str, Any],
) -> int:
    """Record a claim's measured results and its `finish` event (`detail`, with the count
    handed back); the `done` items are done unless a sibling took them over after the lease
    ran out (then both runs count: run twice, never lost); the claim's other items go back to
    the queue: how many. ONE statement; the claim row is locked before its items (each item
    update reads the claim's)."""
    row = conn.execute(
        text(
            "WITH c AS (UPDATE work_queue_claim SET state = CASE WHEN state = 'open'"
            "   THEN 'finished' ELSE state END, finished_at = clock_timestamp()"
            "   WHERE queue_id = :q AND id = :c RETURNING id),"
            " d AS (UPDATE work_queue_item i SET state = 'done', claim_id = c.id,"
            "   reserved_for = NULL FROM c WHERE i.queue_id = :q AND i.position = ANY(:done)"
            "   AND (i.claim_id = c.id OR i.state = 'pending') RETURNING 1),"
            " r AS (UPDATE work_queue_item i SET state = 'pending', claim_id = NULL FROM c"
            "   WHERE i.queue_id = :q AND i.claim_id = c.id AND i.state IN ('claimed', 'running')"
            "   AND i.position <> ALL(:done) RETURNING 1),"
            " res AS (INSERT INTO work_queue_result"
            "   (queue_id, claim_id, node, attempt, nodeid, duration_s, outcome)"
            "   SELECT :q, c.id, :n, :a, x.nodeid, x.d, x.o FROM c,"
            "   unnest(CAST(:ids AS text[]), CAST(:secs AS float8[]), CAST(:outs AS text[]))"
            "   AS x(nodeid, d, o) RETURNING 1),"
            " back AS (SELECT count(*) AS n FROM r),"
            " e AS (INSERT INTO work_queue_event (queue_id, claim_id, node, attempt, kind, detail)"
            "   SELECT :q, c.id, :n, :a, 'finish',"
            "   CAST(:detail AS jsonb) || jsonb_build_object('handed_back', back.n) FROM c, back)"
            " SELECT back.n, (SELECT count(*) FROM d), (SELECT count(*) FROM res) FROM back"
        ),
        {"q": queue_id, "c": claim.id, "n": claim.node, "a": claim.attempt, "done": list(done),
         "ids": [r[0] for r in results], "secs": [r[1] for r in results],
         "outs": [r[2] for r in results], "detail": json.dumps(detail, allow_nan=False)},
    ).one()  # fmt: skip
    return int(row[0])


def release_claims(conn: Connection, queue_id: int, node: str) -> list[int]:
    """Hand `node`'s open claims back: released, their items pending again."""
    ids = [
        int(r[0])
        for r in conn.execute(
            text(
                "UPDATE work_queue_claim SET state = 'released', finished_at = clock_timestamp()"
                " WHERE queue_id = :q AND node = :n AND state = 'open' RETURNING id"
            ),
            {"q": queue_id, "n": node},
        ).all()
    ]
    if ids:
        conn.execute(
            text(
                "UPDATE work_queue_item SET state = 'pending', claim_id = NULL"
                " WHERE queue_id = :q AND state IN ('claimed', 'running') AND claim_id = ANY(:ids)"
            ),
            {"q": queue_id, "ids": ids},
        )
    return ids


def pending_items(conn: Connection, queue_id: int) -> list[ItemRow]:
    """Items nobody holds or ran, in queue order."""
    rows = conn.execute(
        text(
            "SELECT position, name, unit, nodeids, estimated, predicted_s FROM work_queue_item"
            " WHERE queue_id = :q AND state = 'pending' ORDER BY position"
        ),
        {"q": queue_id},
    ).all()
    return [
        ItemRow(int(r[0]), str(r[1]), str(r[2]), tuple(r[3]), tuple(r[4]), float(r[5]))
        for r in rows
    ]


def load_results(conn: Connection, queue_id: int) -> list[tuple[str, str, int, int, float]]:
    """Every measured run: (nodeid, node, attempt, claim id, seconds)."""
    rows = conn.execute(
        text(
            "SELECT nodeid, node, attempt, coalesce(claim_id, 0), coalesce(duration_s, 0)"
            " FROM work_queue_result WHERE queue_id = :q ORDER BY at"
        ),
        {"q": queue_id},
    ).all()
    return [(str(r[0]), str(r[1]), int(r[2]), int(r[3]), float(r[4])) for r in rows]


def load_stops(conn: Connection, queue_id: int) -> list[tuple[str, int, float, dict[str, Any]]]:
    """Budget stops: (node, attempt, seconds since the queue opened, detail)."""
    rows = conn.execute(
        text(
            "SELECT e.node, e.attempt, extract(epoch FROM e.at - q.created_at), e.detail"
            " FROM work_queue_event e JOIN work_queue q ON q.id = e.queue_id"
            " WHERE e.queue_id = :q AND e.kind = 'budget-stop' ORDER BY e.id"
        ),
        {"q": queue_id},
    ).all()
    return [(str(r[0]), int(r[1]), float(r[2]), dict(r[3])) for r in rows]
