"""The tables. Times are naive UTC (``web.db.utcnow()``), the same on SQLite and PostgreSQL.

A submission is what a learner sent; a job is one request to the workers (the queue):
judge a submission (``kind="judge"``; a rejudge adds another job for the same submission,
at a lower priority than live submissions) or validate a problem version
(``kind="validate"``, like ``python -m judge check``), time an accepted submission
precisely for the leaderboard (``kind="rank"``, the lowest priority; it never changes the
verdict) or run a learner's code on the public cases only (``kind="run"``, a :class:`Run`,
never a submission). Progress events belong to a judge, rank or run job's current
attempt; a validation's progress is kept on its version row.

The problem bank: a ``problems`` row per slug, a ``problem_versions`` row per stored
package (its files live under ``DATA_DIR/bank/<content hash>/``, never changed), and the
published version per problem. Admin actions go to ``audit_log``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
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
    # a disabled account cannot log in, and its session and API tokens stop working
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # a session cookie is accepted only while it carries this number; logging out
    # increments it, which ends every session of the account (copies of the cookie too)
    session_gen: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
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
    # the learner agreed to show this code to others who solved the problem (if accepted)
    share: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    report: Mapped[dict[str, Any] | None]  # the full report (judge.report.Report.to_json)
    created_at: Mapped[datetime]
    judged_at: Mapped[datetime | None]
    # The leaderboard's timing (a ``rank`` job after an accepted verdict with a measured
    # speed check, web.data.ranking): None (no ranking: not accepted, or no speed check),
    # "pending" (its job is queued or running), "done" or "failed" (the machine was too
    # noisy to time it; never shown with a number).
    rank_status: Mapped[str | None] = mapped_column(String(16))
    rank_ratio: Mapped[float | None] = mapped_column(Float)  # refined slowest ratio
    # done: {"checks": [web.timing check dicts, the runs combined], "device", "ranked_at",
    # "runs": [{"ranked_at", "ratios": {check: ratio}}]}: what the page shows; pending:
    # {"runs": [{"checks", "device", "ranked_at"}]}, the runs so far (web.data.ranking)
    ranking: Mapped[dict[str, Any] | None]
    # A judging that replaced a verdict with another (a rejudge, or the GPU's judging after
    # a CPU one: web.data.submissions.verdict_change): the verdict the learner saw before,
    # when it changed and the version that judged it; all None when it never changed.
    previous_verdict: Mapped[str | None] = mapped_column(String(32))
    verdict_changed_at: Mapped[datetime | None]
    verdict_changed_version: Mapped[str | None] = mapped_column(String(64))
    # when the owner opened the submission page after that change (None: not yet, and the
    # problem page says so)
    verdict_change_seen_at: Mapped[datetime | None]

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
    kind: Mapped[str] = mapped_column(String(16), default="judge",
                                      server_default="judge")  # judge|validate|rank|run
    # judge and rank jobs: the submission; validate jobs: the version; run jobs: the run
    # (the others are None)
    submission_id: Mapped[int | None] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    version_id: Mapped[int | None] = mapped_column(
        ForeignKey("problem_versions.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    # the package version to judge at (a rejudge names the published one); None: the
    # submission's own
    problem_version: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued|running|done
    priority: Mapped[int] = mapped_column(Integer, default=0)  # higher is judged first
    # needs_gpu: only GPU workers may judge it (every case needs CUDA).
    # prefers_gpu: GPU workers take it first; CPU workers only while no GPU worker is alive
    # (its CUDA checks are then skipped, and the report says so).
    needs_gpu: Mapped[bool] = mapped_column(Boolean, default=False)
    prefers_gpu: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # not claimed before this time (None: at once): a submission's next rank run, spaced
    # from the one before (web.data.ranking)
    not_before: Mapped[datetime | None]
    # validate jobs: shard ``shard`` of ``shards`` of a version's validation, split across
    # the workers idle when it was queued; the shards take the files (ValidationTake)
    shard: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    shards: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    worker_id: Mapped[int | None] = mapped_column(ForeignKey("workers.id", ondelete="SET NULL"))
    lease_token: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    claimed_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]

    submission: Mapped[Submission | None] = relationship()
    version: Mapped[ProblemVersion | None] = relationship()
    run: Mapped[Run | None] = relationship()


class Run(Base):
    """"Run examples": code judged on a problem's public cases only, with no speed check.
    Not a submission: no standings, leaderboard, history or acceptance query reads this
    table. Its one job has ``kind="run"``; its progress events are found by that job
    (their ``submission_id`` is 0)."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_user_created", "user_id", "created_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    problem: Mapped[str] = mapped_column(String(64))
    problem_version: Mapped[str] = mapped_column(String(64))
    code: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued|running|done
    verdict: Mapped[str | None] = mapped_column(String(32))
    passed: Mapped[int | None] = mapped_column(Integer)
    total: Mapped[int | None] = mapped_column(Integer)
    report: Mapped[dict[str, Any] | None]  # public tests only (web.data.runs.public_only)
    created_at: Mapped[datetime]
    judged_at: Mapped[datetime | None]

    user: Mapped[User] = relationship()


class JobEvent(Base):
    """One progress event of a job's current attempt, already redacted for learners.
    Readers follow a submission's events by id, so an id is never used twice (SQLite's
    AUTOINCREMENT; PostgreSQL's sequences never reuse one), also after a lost attempt's
    events are deleted."""

    __tablename__ = "job_events"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[int] = mapped_column(Integer, index=True)
    payload: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]


class ValidationTake(Base):
    """Which shard of a validation round judges a file: a round's shards take the files one
    at a time, the costliest first, whichever asks first (web/data/queue.py: take_file), so
    that they end together however the files' costs were guessed. ``round_job_id`` is the
    round's first job; a shard handed out again takes its own files again."""

    __tablename__ = "validation_takes"
    __table_args__ = (UniqueConstraint("round_job_id", "label"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    round_job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    label: Mapped[str] = mapped_column(String(300))
    shard: Mapped[int] = mapped_column(Integer)


class ProblemRecord(Base):
    """A problem of the bank, whatever its versions; learners see its published one."""

    __tablename__ = "problems"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    number: Mapped[int] = mapped_column(Integer)
    # problem_versions.id of the version learners see; None: not published. (No foreign
    # key: the two tables would point at each other, and versions are never deleted.)
    published_version_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime]


class ProblemVersion(Base):
    """One stored package: ``DATA_DIR/bank/<content_hash>/``, immutable.

    status: ``uploaded`` (stored, validation queued), ``validating`` (a worker runs it),
    ``valid`` or ``invalid`` (``report`` says why). Only a valid version is published.
    ``origin``: ``upload`` (admin page), ``edit`` (admin page), ``cli`` (``problems add``),
    ``bundled`` (seeded from the problems folder, trusted: checked in CI).
    """

    __tablename__ = "problem_versions"
    __table_args__ = (UniqueConstraint("problem_id", "content_hash"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"),
                                            index=True)
    content_hash: Mapped[str] = mapped_column(String(64))
    # the number in its problem.toml (None: stored before it was kept). The problem takes it
    # when this version is published, never before (learners would not see it yet).
    number: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="uploaded")
    origin: Mapped[str] = mapped_column(String(16))
    note: Mapped[str] = mapped_column(String(200), default="")
    # validation: {"ok", "errors", "files": [{label, expected, verdict, ok, detail}], ...}
    report: Mapped[dict[str, Any] | None]
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime]
    validated_at: Mapped[datetime | None]

    problem: Mapped[ProblemRecord] = relationship()
    author: Mapped[User | None] = relationship()


class AuditEntry(Base):
    """An admin action: who, what, on what, when (shown to admins at /admin/audit)."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    actor: Mapped[str] = mapped_column(String(64))  # the username, or "cli"
    action: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(String(128), default="")
    detail: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(index=True)
