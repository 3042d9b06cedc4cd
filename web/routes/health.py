"""``GET /healthz``: for load balancers and container health checks. 200 when the app
answers and its database does; 503 otherwise. No session, no language, nothing cached."""

from __future__ import annotations

import logging

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from web.deps import SessionDep

log = logging.getLogger("web.health")

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(db: SessionDep) -> JSONResponse:
    """The app and its database answer."""
    try:
        db.execute(text("select 1"))
    except SQLAlchemyError as e:
        log.warning("health check: the database does not answer: %s", e)
        return JSONResponse({"status": "unavailable", "database": "down"}, status_code=503)
    return JSONResponse({"status": "ok", "database": "ok"})
