"""The audit log: every admin action, who (a user, or ``cli``) and when."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from web.models import (
    AuditEntry,
    User,
)


def record(db: Session, user: User | None, action: str, target: str, now: datetime,
          **detail: Any) -> None:
    """Record an admin action (committed with the caller's transaction)."""
    db.add(AuditEntry(user_id=user.id if user else None,
                      actor=user.username if user else "cli", action=action,
                      target=target[:128], detail=detail, created_at=now))


def newest(db: Session, limit: int = 200) -> list[AuditEntry]:
    return list(db.scalars(select(AuditEntry).order_by(AuditEntry.id.desc()).limit(limit)))
