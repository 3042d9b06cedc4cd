"""Workers: registration, when each was last heard from, whether a GPU worker is alive."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from web.models import (
    Job,
    Worker,
)

GPU_WORKER_ALIVE_S = 120  # a GPU worker not heard from for this long is presumed gone
# A worker waiting for a job asks again at least this often (its claim's long poll).
IDLE_SEEN_S = 60


def register_worker(db: Session, name: str, gpu: bool, capabilities: dict[str, Any],
                    now: datetime) -> Worker:
    worker = Worker(name=name, gpu=gpu, capabilities=capabilities, registered_at=now,
                    last_seen_at=now)
    db.add(worker)
    db.commit()
    return worker


def touch_worker(db: Session, worker_id: int, now: datetime) -> None:
    """The worker is alive (it asked for work or renewed a lease)."""
    db.execute(update(Worker).where(Worker.id == worker_id,
                                    Worker.last_seen_at < now - timedelta(seconds=5))
               .values(last_seen_at=now))
    db.commit()


def gpu_worker_alive(db: Session, now: datetime) -> bool:
    since = now - timedelta(seconds=GPU_WORKER_ALIVE_S)
    return bool(db.scalar(select(func.count()).select_from(Worker)
                          .where(Worker.gpu.is_(True), Worker.last_seen_at >= since)))


def idle_workers(db: Session, now: datetime, *, gpu: bool = False) -> int:
    """Workers heard from lately (a waiting worker polls) that hold no running job; with
    ``gpu``, GPU workers only."""
    busy = select(Job.worker_id).where(Job.status == "running", Job.worker_id.is_not(None))
    q = (select(func.count()).select_from(Worker)
         .where(Worker.last_seen_at >= now - timedelta(seconds=IDLE_SEEN_S),
                Worker.id.not_in(busy)))
    if gpu:
        q = q.where(Worker.gpu.is_(True))
    return int(db.scalar(q) or 0)
