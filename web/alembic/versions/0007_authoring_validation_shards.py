"""jobs.shard, jobs.shards: one version's validation split across idle workers;
problem_versions.number: the number a version brings, taken by its problem on publishing.

A version's validation is queued as ``shards`` validate jobs (as many as workers were idle,
at most one per file to judge); job ``shard`` judges the files whose index in the check's
order is ``shard`` modulo ``shards``, and the version's report merges them
(web/data/bank.py). Existing rows are one-shard validations (and judge jobs, which ignore
the columns).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("shard", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("shards", sa.Integer(), nullable=False, server_default="1"))
    with op.batch_alter_table("problem_versions") as batch:
        batch.add_column(sa.Column("number", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("problem_versions") as batch:
        batch.drop_column("number")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("shards")
        batch.drop_column("shard")
