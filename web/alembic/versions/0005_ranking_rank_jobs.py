"""submissions.rank_status, rank_ratio, ranking: the leaderboard's precise timing.

After an accepted verdict with a measured speed check the server queues a ``rank`` job
(jobs.kind, a string already) at the lowest priority; its result fills these columns and
never the verdict. Existing submissions get no ranking (NULL): the leaderboard leaves
them out until they are rejudged.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("rank_status", sa.String(16), nullable=True))
        batch.add_column(sa.Column("rank_ratio", sa.Float(), nullable=True))
        batch.add_column(sa.Column("ranking", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("ranking")
        batch.drop_column("rank_ratio")
        batch.drop_column("rank_status")
