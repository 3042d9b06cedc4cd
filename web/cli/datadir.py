"""The data folder the admin commands work on directly (the database and the problem
bank), as a running server would see it."""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from judge.package import problems_dir
from judge.problem_store import Store
from web import bundled, db
from web.cache_scopes import watch
from web.local_relay import relay_folder, send_once
from web.page_cache import PageCache, encode
from web.pg_relay import notify_once
from web.settings import Settings

log = logging.getLogger("web.cli")


def announce(settings: Settings, engine, payload: str) -> None:
    """Tell the running web processes that pages they cache are out of date."""
    try:
        if engine.dialect.name == "postgresql":
            notify_once(engine, payload)
        else:
            send_once(relay_folder(settings.data_dir), payload)
    except Exception as e:  # they see it within their cache's TTL anyway
        log.warning("could not tell the web processes about this change: %s", e)


@dataclass(frozen=True)
class DataFolder:
    settings: Settings
    sessions: sessionmaker[Session]
    store: Store


def open_data(args: argparse.Namespace) -> DataFolder:
    """The data folder of ``--data-dir`` (default: $JUDGE_DATA_DIR or ./data), migrated to
    the newest schema, with the bundled problems seeded (as the server does at start)."""
    settings = (Settings(data_dir=Path(args.data_dir)) if args.data_dir else Settings()).prepare()
    engine = db.make_engine(settings.db_url)
    db.migrate(engine)
    sessions, store = db.make_sessionmaker(engine), Store(settings.bank_dir)
    # what these commands change (a user disabled, a version published) reaches the
    # running web processes' caches at once, not after their TTL
    watch(sessions, PageCache(),
          publish=lambda scopes: announce(settings, engine, encode(scopes)))
    folder = Path(args.problems) if getattr(args, "problems", None) else (
        settings.problems_dir or problems_dir())
    with sessions() as session:
        bundled.seed(session, store, folder, db.utcnow())
    return DataFolder(settings, sessions, store)
