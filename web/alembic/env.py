"""Alembic environment: runs on the engine the app passes in (``web.db.migrate``), or on
``sqlalchemy.url`` when called from the alembic command line."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from web.models import Base

config = context.config
target_metadata = Base.metadata


def run() -> None:
    engine = config.attributes.get("engine") or create_engine(
        config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # Batch migrations recreate a table (copy, drop, rename): with foreign keys on,
            # dropping the old table would cascade deletes into the tables referencing it
            # (recreating users would delete every submission). Set outside a transaction.
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=sqlite)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()
        if sqlite:
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")  # pooled: as web.db set it


run()
