"""Shard assignments pinned per CI pipeline (the `shard_pin` table): the first shard of a
pipeline to ask fixes the plan every later shard of that pipeline gets.

The pinned assignment is stored as JSON by one TypeAdapter over the domain's shards, read
back into the same objects (no hand-written dict form)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import TypeAdapter
from sqlalchemy import Connection, text

from analysis.split.shards import Shard

# Pins older than this are gone: a pipeline's shards start within hours, not weeks.
PIN_DAYS = 14


@dataclass(frozen=True)
class PinnedShards:
    """A pinned assignment: every shard and the stored plan that names them."""

    plan_id: str | None
    shards: tuple[Shard, ...]


PINNED = TypeAdapter(PinnedShards)


@dataclass(frozen=True)
class ShardPin:
    """The pinned assignment and the digest of the collection it was made for."""

    collected: str
    shards: PinnedShards


def load_pin(conn: Connection, project_id: int, pipeline: str, total: int) -> ShardPin | None:
    """The pipeline's pinned assignment of `total` shards, None before the first shard asks."""
    row = conn.execute(
        text(
            "SELECT collected, answer FROM shard_pin"
            " WHERE project_id = :p AND pipeline = :pipeline AND total = :total"
        ),
        {"p": project_id, "pipeline": pipeline, "total": total},
    ).first()
    return None if row is None else ShardPin(str(row[0]), PINNED.validate_python(row[1]))


def pin_once(
    conn: Connection, project_id: int, pipeline: str, total: int, pin: ShardPin
) -> ShardPin:
    """Pin `pin` unless a sibling shard pinned first; the pin that holds either way."""
    inserted = conn.execute(
        text(
            """
            INSERT INTO shard_pin (project_id, pipeline, total, collected, answer)
            VALUES (:p, :pipeline, :total, :collected, CAST(:answer AS jsonb))
            ON CONFLICT (project_id, pipeline, total) DO NOTHING
            RETURNING 1
            """
        ),
        {
            "p": project_id,
            "pipeline": pipeline,
            "total": total,
            "collected": pin.collected,
            "answer": PINNED.dump_json(pin.shards).decode(),
        },
    ).first()
    if inserted is not None:
        conn.execute(
            text(
                "DELETE FROM shard_pin WHERE project_id = :p"
                " AND created_at < now() - make_interval(days => :days)"
            ),
            {"p": project_id, "days": PIN_DAYS},
        )
        return pin
    # A sibling committed its pin first (INSERT waited for it): that one holds.
    pinned = load_pin(conn, project_id, pipeline, total)
    assert pinned is not None
    return pinned
