"""How long validating one package takes on 1 and on 2 idle workers (issue 15).

For each worker count, a fresh web app (a temporary data folder, SQLite) gets the package
as an upload while that many workers are idle, so its validation is split into that many
shards (web/data/queue.py); the workers (threads, each with its own sandbox slot, as
``serve`` starts them) then validate it, and the time from the upload to the version's
result is printed, with the version's verdict and how many shards it had.

    python bench/validation_workers.py [PACKAGE_DIR] [--workers 1 2] [--no-sandbox]

Speed checks take a machine-wide lock (judge/throughput.py), so the measured parts of two
shards never overlap: the gain comes from everything else (runner starts, the cases).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi.testclient import TestClient

from judge.isolation import make_launcher
from judge.worker import Problems, Worker, WorkerClient
from web import bank_admin
from web.main import create_app
from web.models import ProblemVersion
from web.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def validate_with(package: Path, workers: int, no_sandbox: bool) -> tuple[float, str, int]:
    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp:
        empty = Path(tmp) / "problems"
        empty.mkdir()
        settings = Settings(data_dir=Path(tmp) / "data", problems_dir=empty,
                            worker_token="bench", secret_key="bench")
        app = create_app(settings)
        with TestClient(app) as http:
            client = WorkerClient("", "bench", http=http)
            ids = [client.register(f"bench{i}", False, {}) for i in range(workers)]
            started = time.monotonic()
            with app.state.sessionmaker() as db:
                version, _ = bank_admin.add_version(db, app.state.store, None, None,
                                                    app.state.clock(), origin="cli",
                                                    note="bench", folder=package)
                vid = version.id
            threads = []
            for slot, wid in enumerate(ids):
                problems = Problems(empty, store=settings.bank_dir, fetch=client.download)
                worker = Worker(client, make_launcher(no_sandbox, slot), problems,
                                name=f"bench{slot}")
                worker.worker_id = wid
                thread = threading.Thread(target=worker.run, kwargs={"until_idle": True})
                thread.start()
                threads.append(thread)
            for thread in threads:
                thread.join()
            took = time.monotonic() - started
            with app.state.sessionmaker() as db:
                row = db.get(ProblemVersion, vid)
                status, shards = row.status, (row.report or {}).get("shards", 1)
        app.state.engine.dispose()
    return took, status, shards


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", nargs="?", default=str(ROOT / "problems" / "_template"))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-sandbox", action="store_true")
    args = ap.parse_args()
    for n in args.workers:
        took, status, shards = validate_with(Path(args.package), n, args.no_sandbox)
        print(f"{Path(args.package).name}: {n} worker(s): {took:.1f} s ({status}, "
              f"{shards} shard(s))", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
