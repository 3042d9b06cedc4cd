"""users.session_gen: logging out ends the account's sessions.

The session cookie is signed but stateless; it carries the generation it was made at, and
a cookie whose generation is not the user's current one is not accepted. Logging out
increments it, so a copy of the cookie stops working too.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("session_gen", sa.Integer(), nullable=False,
                                   server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("session_gen")
