"""job_events ids are never reused on SQLite (AUTOINCREMENT).

A plain INTEGER PRIMARY KEY on SQLite takes max(id) + 1: once a lost worker's events are
deleted (its job handed out again), the new attempt's events got the same ids, and a
reader following ``id > last seen`` skipped the new attempt's start. PostgreSQL's
sequences never hand out an id twice, so only SQLite's table is rebuilt.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-06
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _rebuild(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # copies the rows (ids included), indexes and foreign key into the new table
    with op.batch_alter_table("job_events", recreate="always",
                              table_kwargs={"sqlite_autoincrement": autoincrement}):
        pass


def upgrade() -> None:
    _rebuild(True)


def downgrade() -> None:
    _rebuild(False)
