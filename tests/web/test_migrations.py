"""Migrations, on SQLite and on PostgreSQL: an empty database is brought to the models'
schema; an existing database keeps its rows through every later migration (from the first
revision and from the one before head); rows stored with explicit ids (a copy or a restore)
do not make the next insert collide; event ids are never used twice."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from web import db
from web.models import Base

pytestmark = pytest.mark.both_databases  # each test on SQLite and on PostgreSQL


@pytest.fixture
def engine(tmp_path, database_url):
    engine = db.make_engine(database_url or f"sqlite:///{tmp_path / 'old.db'}")
    yield engine
    engine.dispose()


def revisions(engine) -> list[str]:
    """Every revision, oldest first."""
    script = ScriptDirectory.from_config(db.alembic_config(engine))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def old_rows(conn) -> None:
    """What a judge at revision 0001 could hold, with explicit ids."""
    conn.execute(text("insert into users (id, username, username_key, password_hash, "
                      "is_admin, lang, created_at) values (1, 'amy', 'amy', 'x', false, 'zh', "
                      "'2026-01-01')"))
    conn.execute(text("insert into submissions (id, user_id, problem, problem_version, code, "
                      "status, created_at) values (1, 1, 'add-one', 'v', 'c', 'queued', "
                      "'2026-01-01')"))
    conn.execute(text("insert into jobs (id, submission_id, status, priority, needs_gpu, "
                      "prefers_gpu, attempts, created_at) values (1, 1, 'queued', 0, false, "
                      "false, 0, '2026-01-01')"))
    conn.execute(text("insert into job_events (id, job_id, submission_id, payload, "
                      "created_at) values (5, 1, 1, '{}', '2026-01-01')"))


def test_an_empty_database_gets_the_models_schema(engine):
    db.migrate(engine)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
        head = conn.execute(text("select version_num from alembic_version")).scalar()
    assert head == revisions(engine)[-1]
    db.migrate(engine)  # idempotent


@pytest.mark.parametrize("start", ["first", "previous"])
def test_an_existing_database_keeps_its_rows(engine, start):
    chain = revisions(engine)
    command.upgrade(db.alembic_config(engine), chain[0] if start == "first" else chain[-2])
    with engine.begin() as conn:
        old_rows(conn)
    db.migrate(engine)
    with engine.begin() as conn:
        assert list(conn.execute(text("select username, disabled, session_gen from users"))
                    ) == [("amy", False, 0)]
        assert list(conn.execute(text("select submission_id, kind, version_id from jobs"))) == [
            (1, "judge", None)]
        assert list(conn.execute(text("select id, job_id from job_events"))) == [(5, 1)]
        # the next rows get ids after the explicit ones (PostgreSQL: the sequences were
        # moved past them), and a deleted event's id is not given again (0003)
        conn.execute(text("insert into users (username, username_key, password_hash, "
                          "is_admin, lang, created_at) values ('bo', 'bo', 'x', false, 'en', "
                          "'2026-01-02')"))
        assert conn.execute(text("select max(id) from users")).scalar() == 2
        conn.execute(text("delete from job_events"))
        conn.execute(text("insert into job_events (job_id, submission_id, payload, "
                          "created_at) values (1, 1, '{}', '2026-01-01')"))
        assert list(conn.execute(text("select id from job_events"))) == [(6,)]
        if engine.dialect.name == "sqlite":
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1  # on again


def test_moving_sequences_never_takes_them_back(engine):
    """Events deleted with their job's result leave the sequence ahead of max(id): starting
    the app again must not hand those ids out a second time."""
    db.migrate(engine)
    with engine.begin() as conn:
        old_rows(conn)
    db.migrate(engine)  # moves the sequences past the explicit ids
    with engine.begin() as conn:
        for _ in range(3):
            conn.execute(text("insert into job_events (job_id, submission_id, payload, "
                              "created_at) values (1, 1, '{}', '2026-01-01')"))
        conn.execute(text("delete from job_events where id > 5"))
    db.migrate(engine)
    with engine.begin() as conn:
        conn.execute(text("insert into job_events (job_id, submission_id, payload, "
                          "created_at) values (1, 1, '{}', '2026-01-01')"))
        assert conn.execute(text("select max(id) from job_events")).scalar() == 9


def test_0005_adds_an_empty_ranking_to_existing_submissions(engine):
    """Submissions judged before rank jobs existed have no ranking (the leaderboard leaves
    them out until a rejudge), and the columns take one afterwards."""
    command.upgrade(db.alembic_config(engine), "0004")
    with engine.begin() as conn:
        old_rows(conn)
    db.migrate(engine)
    with engine.begin() as conn:
        assert list(conn.execute(text("select id, rank_status, rank_ratio, ranking "
                                      "from submissions"))) == [(1, None, None, None)]
        conn.execute(text("update submissions set rank_status = 'done', rank_ratio = 0.93, "
                          "ranking = :r where id = 1"), {"r": '{"checks": []}'})
        assert list(conn.execute(text("select rank_status, rank_ratio from submissions"))
                    ) == [("done", 0.93)]


def test_0009_adds_no_verdict_change_to_existing_submissions(engine):
    """Verdicts judged before rejudges were told about stand as they were shown; the
    columns record a change afterwards."""
    command.upgrade(db.alembic_config(engine), "0008")
    with engine.begin() as conn:
        old_rows(conn)
    db.migrate(engine)
    with engine.begin() as conn:
        assert list(conn.execute(text(
            "select previous_verdict, verdict_changed_at, verdict_changed_version, "
            "verdict_change_seen_at from submissions"))) == [(None, None, None, None)]
        conn.execute(text("update submissions set verdict = 'accepted', previous_verdict = "
                          "'wrong_answer', verdict_changed_at = '2026-01-02', "
                          "verdict_changed_version = 'v2' where id = 1"))
        assert list(conn.execute(text("select previous_verdict, verdict_changed_version "
                                      "from submissions"))) == [("wrong_answer", "v2")]
