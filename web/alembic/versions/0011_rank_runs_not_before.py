"""jobs.not_before: a submission's leaderboard timing combines several rank runs, spaced.

One rank run's ratio follows the machine's state over minutes; the leaderboard's ratio now
combines ``rank_runs`` runs (web.data.ranking), each queued when the one before ends and
not claimed before ``rank_spacing_seconds`` later. Existing jobs have no such time (NULL:
claimed at once); existing rankings stand as they are (one run).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("not_before", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("not_before")
