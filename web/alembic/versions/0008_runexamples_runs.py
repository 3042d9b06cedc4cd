"""runs: "Run examples" (public cases only, no speed check), and jobs.run_id.

A run is not a submission, so it has a table of its own that no standings, leaderboard,
history or acceptance query reads; its job is ``kind="run"`` with ``run_id`` set.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("problem", sa.String(64), nullable=False),
        sa.Column("problem_version", sa.String(64), nullable=False),
        sa.Column("code", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=True),
        sa.Column("passed", sa.Integer(), nullable=True),
        sa.Column("total", sa.Integer(), nullable=True),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("judged_at", sa.DateTime(), nullable=True),
    )
    op.create_index("ix_runs_user_created", "runs", ["user_id", "created_at"])
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("run_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_jobs_run_id_runs", "runs", ["run_id"], ["id"],
                                 ondelete="CASCADE")
        batch.create_index("ix_jobs_run_id", ["run_id"])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_run_id")
        batch.drop_constraint("fk_jobs_run_id_runs", type_="foreignkey")
        batch.drop_column("run_id")
    op.drop_index("ix_runs_user_created", table_name="runs")
    op.drop_table("runs")
