"""validation_takes: a validation round's shards take its files one at a time.

The shards of a version's validation used to judge a fixed share of the files each
(dealt by guessed cost); they now ask the server for each file before judging it, the
costliest first, so that the shards end together whatever each file really costs. A row
says which shard took a file in a round (the round's first job). A round queued before
this revision starts with no rows: its shards take their files like any other.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "validation_takes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("round_job_id", sa.Integer(),
                  sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("label", sa.String(300), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.UniqueConstraint("round_job_id", "label"),
    )


def downgrade() -> None:
    op.drop_table("validation_takes")
