"""The tables. Times are naive UTC (``web.db.utcnow()``), the same on SQLite and PostgreSQL.

A submission is what a learner sent; a job is one request to judge it (the queue). Today
every submission has one job; a rejudge (issue 6) adds another job for the same submission,
with a higher priority. Progress events belong to a job's current attempt.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    type_annotation_map: ClassVar = {dict[str, Any]: JSON, datetime: DateTime()}


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(32))
    # casefolded username: "Alice" and "alice" are the same account name
    username_key: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    lang: Mapped[str] = mapped_column(String(8), default="zh")
    created_at: Mapped[datetime]


class ApiToken(Base):
    """A bearer token for the JSON API; only its sha256 is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]

    user: Mapped[User] = relationship()


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        Index("ix_submissions_user_created", "user_id", "created_at"),
        Index("ix_submissions_problem_verdict", "problem", "verdict"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    problem: Mapped[str] = mapped_column(String(64))  # the slug
    # the package's content hash when it was submitted (the worker judges that version)
    problem_version: Mapped[str] = mapped_column(String(64))
    code: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued|running|done
    verdict: Mapped[str | None] = mapped_column(String(32))
    passed: Mapped[int | None] = mapped_column(Integer)
    total: Mapped[int | None] = mapped_column(Integer)
    ratio: Mapped[float | None] = mapped_column(Float)  # slowest throughput ratio measured
    report: Mapped[dict[str, Any] | None]  # the full report (judge.report.Report.to_json)
    created_at: Mapped[datetime]
    judged_at: Mapped[datetime | None]

    user: Mapped[User] = relationship()


class Worker(Base):
    __tablename__ = "workers"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    gpu: Mapped[bool] = mapped_column(Boolean, default=False)
    capabilities: Mapped[dict[str, Any]]
    registered_at: Mapped[datetime]
    last_seen_at: Mapped[datetime]


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_claim", "status", "needs_gpu", "priority", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued|running|done
    priority: Mapped[int] = mapped_column(Integer, default=0)  # higher is judged first
    # needs_gpu: only GPU workers may judge it (every case needs CUDA).
    # prefers_gpu: GPU workers take it first; CPU workers only while no GPU worker is alive
    # (its CUDA checks are then skipped, and the report says so).
    needs_gpu: Mapped[bool] = mapped_column(Boolean, default=False)
    prefers_gpu: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker_id: Mapped[int | None] = mapped_column(ForeignKey("workers.id", ondelete="SET NULL"))
    lease_token: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    claimed_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]

    submission: Mapped[Submission] = relationship()


class JobEvent(Base):
    """One progress event of a job's current attempt, already redacted for learners."""

    __tablename__ = "job_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[int] = mapped_column(Integer, index=True)
    payload: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]
