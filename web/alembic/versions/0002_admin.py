"""Admins: the problem bank in the database (problems, their stored versions, the
published pointer), the audit log, disabled users, and validate jobs in the queue.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "problems",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("published_version_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("slug"),
    )
    op.create_table(
        "problem_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("note", sa.String(length=200), nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("validated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["problem_id"], ["problems.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["created_by"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("problem_id", "content_hash"),
    )
    op.create_index("ix_problem_versions_problem_id", "problem_versions", ["problem_id"])
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("target", sa.String(length=128), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_audit_log_created_at", "audit_log", ["created_at"])
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("disabled", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("kind", sa.String(length=16), nullable=False,
                                   server_default="judge"))
        batch.add_column(sa.Column("version_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("problem_version", sa.String(length=64), nullable=True))
        batch.alter_column("submission_id", existing_type=sa.Integer(), nullable=True)
        batch.create_foreign_key("fk_jobs_version_id", "problem_versions", ["version_id"],
                                 ["id"], ondelete="CASCADE")
        batch.create_index("ix_jobs_version_id", ["version_id"])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_version_id")
        batch.drop_constraint("fk_jobs_version_id", type_="foreignkey")
        batch.alter_column("submission_id", existing_type=sa.Integer(), nullable=False)
        batch.drop_column("problem_version")
        batch.drop_column("version_id")
        batch.drop_column("kind")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("disabled")
    for table in ("audit_log", "problem_versions", "problems"):
        op.drop_table(table)
