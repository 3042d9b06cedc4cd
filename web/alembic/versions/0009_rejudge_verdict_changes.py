"""submissions: what a rejudge changed (the verdict the learner saw before, when it changed,
the version that judged it) and when the learner saw that change.

Existing submissions get no change (all NULL): their verdicts stand as they were shown.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-09
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("previous_verdict", sa.String(32), nullable=True))
        batch.add_column(sa.Column("verdict_changed_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("verdict_changed_version", sa.String(64), nullable=True))
        batch.add_column(sa.Column("verdict_change_seen_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("verdict_change_seen_at")
        batch.drop_column("verdict_changed_version")
        batch.drop_column("verdict_changed_at")
        batch.drop_column("previous_verdict")
