"""Faults injected from tests through the database itself (triggers), never through a hook in
the worker's code: the worker under test is the production one."""

from __future__ import annotations

import psycopg

# An advisory lock key the blocking fault waits on while a test holds it.
BLOCK_KEY = 727999

BLOCK_BEFORE_DONE = f"""
CREATE OR REPLACE FUNCTION fault_block() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'done' THEN PERFORM pg_advisory_xact_lock({BLOCK_KEY}); END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER fault_block BEFORE UPDATE ON upload
    FOR EACH ROW EXECUTE FUNCTION fault_block();
"""

# Replacing the function needs no lock on the table, unlike dropping the trigger, which would
# wait for the blocked transaction.
DISARM_BLOCK = """
CREATE OR REPLACE FUNCTION fault_block() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RETURN NEW; END $$;
"""


def fail_run_inserts(dsn: str, sqlstate: str, *, times: int) -> None:
    """Make the first `times` inserts into `run` (mid-ingest) fail with `sqlstate`."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE fault_seq")
        conn.execute(
            f"""
            CREATE FUNCTION fault_fail() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                -- A sequence is not rolled back with the failing transaction: it counts tries.
                IF nextval('fault_seq') <= {int(times)} THEN
                    RAISE EXCEPTION 'injected fault' USING ERRCODE = '{sqlstate}';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER fault_fail BEFORE INSERT ON run
                FOR EACH ROW EXECUTE FUNCTION fault_fail();
            """
        )


def fault_tries(dsn: str) -> int:
    """How many inserts the fail_run_inserts fault has seen."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT last_value, is_called FROM fault_seq").fetchone()
    assert row is not None
    return int(row[0]) if row[1] else 0


def blocked_backends(dsn: str) -> int:
    """Backends waiting on the blocking fault's advisory lock."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
            "AND objid = %s AND database = (SELECT oid FROM pg_database "
            "WHERE datname = current_database())",
            (BLOCK_KEY,),
        ).fetchone()
    return 0 if row is None else int(row[0])
