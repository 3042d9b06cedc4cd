"""The database: an engine per app (SQLite in WAL mode by default, PostgreSQL by URL), a
session factory, and Alembic migrations run to head when the app is created."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

from alembic import command
from alembic.config import Config
from sqlalchemy import CursorResult, Engine, Executable, create_engine, event
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent / "alembic"
START_WAIT_S = 60.0  # how long a starting web process waits for its database
log = logging.getLogger("web.db")
T = TypeVar("T")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def rows_changed(db: Session, statement: Executable) -> int:
    """Rows an UPDATE changed (queue steps are conditional UPDATEs: 1 means it happened)."""
    return cast("CursorResult[Any]", db.execute(statement)).rowcount


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record) -> None:
            cur = dbapi_conn.cursor()
            # WAL: readers never block the writer (SSE streams read while workers post).
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


CONNECTED = "connected"  # Session.info: it took a connection (closing it may reach the database)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    maker = sessionmaker(engine, expire_on_commit=False)

    @event.listens_for(maker, "after_begin")
    def _connected(session: Session, _transaction, _connection) -> None:
        session.info[CONNECTED] = True

    return maker


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    # configparser interpolates '%': a URL-encoded password or option must be escaped
    url = engine.url.render_as_string(hide_password=False).replace("%", "%%")
    cfg.set_main_option("sqlalchemy.url", url)
    cfg.attributes["engine"] = engine
    return cfg


def when_ready(start: Callable[[], T], wait_s: float = START_WAIT_S) -> T:
    """``start()`` (a web process's first work with its database: the migrations, the
    first load of the problem bank), tried again with a back-off while the database does
    not answer (it starts, or restarts, with this process: compose, a fault), for up to
    ``wait_s`` seconds; a database that never answers still fails the start."""
    deadline, delay = time.monotonic() + wait_s, 0.2
    while True:
        try:
            return start()
        except OperationalError as e:
            if time.monotonic() > deadline:
                raise
            log.warning("the database does not answer yet (%s); trying again in %.1f s",
                        str(e).splitlines()[0], delay)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest migration (idempotent); on PostgreSQL, then move each
    id sequence past the ids already stored."""
    command.upgrade(alembic_config(engine), "head")
    if engine.dialect.name == "postgresql":
        catch_up_sequences(engine)


def catch_up_sequences(engine: Engine) -> None:
    """Rows stored with explicit ids (a copy from SQLite, rows restored by hand) do not move
    PostgreSQL's sequences, and the next insert would collide with them. Move a sequence
    forward to its table's largest id, never back: ids of deleted rows stay used (readers
    follow ``job_events`` by id, see models.JobEvent)."""
    from sqlalchemy import inspect, text

    from web.models import Base

    with engine.begin() as conn:
        present = set(inspect(conn).get_table_names())
        for table in Base.metadata.sorted_tables:
            if table.name not in present or "id" not in table.c:
                continue
            seq = conn.execute(text("select pg_get_serial_sequence(:t, 'id')"),
                               {"t": table.name}).scalar()
            if seq is None:
                continue
            top = conn.execute(text(f'select max(id) from "{table.name}"')).scalar()
            last, called = conn.execute(text(f"select last_value, is_called from {seq}")).one()
            handed_out = last if called else last - 1  # the largest id given so far
            if top is not None and top > handed_out:
                conn.execute(text("select setval(:s, :v)"), {"s": seq, "v": top})
