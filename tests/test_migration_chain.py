"""Migrations form one chain: parallel work that revises the same parent leaves two heads,
which `alembic upgrade head` refuses on every fresh install."""

from __future__ import annotations

from alembic.script import ScriptDirectory

from app.db.engine import alembic_config


def test_the_migrations_have_exactly_one_head() -> None:
    script = ScriptDirectory.from_config(alembic_config("postgresql://unused/none"))
    assert len(script.get_heads()) == 1, script.get_heads()
    assert [rev.revision for rev in script.walk_revisions()][-1] == "0001"
