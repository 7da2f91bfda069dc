"""Alembic environment: the URL comes from the caller's Config (built from Settings)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text

config = context.config
url = config.get_main_option("sqlalchemy.url")
assert url, "laptime passes the database URL through the Alembic Config"

engine = create_engine(url, poolclass=pool.NullPool)
with engine.connect() as connection:
    # Two processes migrating at once (serve + worker started together) must not race.
    connection.execute(text("SELECT pg_advisory_lock(727001)"))
    connection.commit()
    context.configure(connection=connection, target_metadata=None, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
    connection.execute(text("SELECT pg_advisory_unlock(727001)"))
    connection.commit()
engine.dispose()
