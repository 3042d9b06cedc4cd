"""A GPU worker against a local server, as a deployment runs it: step 5 of gpu_check.sh.

    python bench/gpu_worker_check.py [--gpu 0] [--no-sandbox] [SLUG:FILE:VERDICT ...]

Starts ``python -m judge serve --workers 0`` (SQLite in a temporary folder) and one
``python -m judge worker --server URL --gpu G`` with a package cache of its own (not the
server's bank: everything it judges is downloaded, as on another machine). Submits each
file through the API as a learner, waits for its verdict and prints, per submission:
the verdict against the one expected, submit -> verdict seconds, and each speed check's
device, ratio and verdict. A CUDA check that was skipped (the worker saw no GPU) counts as
a failure unless ``--gpu none``. Exits 1 on any mismatch.

Default files: grad-accumulation's reference (accepted, its CPU and CUDA speed checks),
its ``too_slow/item_per_microbatch_cuda.py`` (a host sync per micro-batch: too slow on the
GPU only) and cuda-prefetcher's reference (accepted, its ``overlap`` check on CUDA).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from web_load import free_port, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "gpu-check-worker"
DEFAULT = ["grad-accumulation:reference.py:accepted",
           "grad-accumulation:submissions/too_slow/item_per_microbatch_cuda.py:too_slow",
           "cuda-prefetcher:reference.py:accepted"]
VERDICT_TIMEOUT_S = 600


@contextlib.contextmanager
def deployment(folder: Path, gpu: str, isolation: list[str]) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    env.update(JUDGE_WORKER_TOKEN=TOKEN, JUDGE_SUBMISSIONS_PER_MINUTE="1000",
               JUDGE_SUBMISSIONS_IN_FLIGHT="1000", PYTHONUNBUFFERED="1")
    url = f"http://127.0.0.1:{port}"
    procs = []
    logs = [folder / "server.log", folder / "worker.log"]
    try:
        with open(logs[0], "wb") as out:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "judge", "serve", "--port", str(port), "--workers",
                 "0", "--data-dir", str(folder / "data"), "--no-pack-prebuild", *isolation],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT))
        wait_healthy(url, procs[0], logs[0])
        (folder / "worker-problems").mkdir()
        with open(logs[1], "wb") as out:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "judge", "--problems", str(folder / "worker-problems"),
                 "worker", "--server", url, "--gpu", gpu, "--name", "gpu-check",
                 "--store", str(folder / "store"), *isolation],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT))
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        for log in logs:
            if log.exists():
                print(f"--- last lines of {log.name}")
                print("\n".join(log.read_text(errors="replace").splitlines()[-8:]))


def learner(c: httpx.Client) -> dict[str, str]:
    c.post("/api/users", json={"username": "gpucheck", "password": "password1"})
    r = c.post("/api/token", data={"username": "gpucheck", "password": "password1"})
    r.raise_for_status()
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def judged(c: httpx.Client, auth: dict, slug: str, path: Path) -> tuple[dict, float]:
    started = time.monotonic()
    r = c.post("/api/submissions", json={"problem": slug, "code": path.read_text()},
               headers=auth)
    r.raise_for_status()
    sid = r.json()["id"]
    while time.monotonic() - started < VERDICT_TIMEOUT_S:
        data = c.get(f"/api/submissions/{sid}", headers=auth).json()
        if data["status"] == "done":
            return data, time.monotonic() - started
        time.sleep(0.2)
    sys.exit(f"submission {sid} ({slug} {path.name}) got no verdict in {VERDICT_TIMEOUT_S} s")


def check(data: dict, expected: str, gpu: str) -> list[str]:
    problems = []
    if data["verdict"] != expected:
        problems.append(f"verdict {data['verdict']}, expected {expected}")
    for t in data.get("throughput", []):
        if t["device"] == "cuda" and t["verdict"] == "skipped" and gpu != "none":
            problems.append(f"the CUDA check {t['name']} was skipped: the worker saw no GPU")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", default=DEFAULT, metavar="SLUG:FILE:VERDICT")
    ap.add_argument("--gpu", default="0", help="the worker's --gpu (an index, or none)")
    ap.add_argument("--no-sandbox", action="store_true")
    args = ap.parse_args()
    isolation = ["--no-sandbox"] if args.no_sandbox else []
    failures = 0
    folder = Path(tempfile.mkdtemp(prefix="gpu-worker-check-"))
    with deployment(folder, args.gpu, isolation) as url, \
            httpx.Client(base_url=url, timeout=60) as c:
        auth = learner(c)
        for case in args.cases:
            slug, file, expected = case.rsplit(":", 2)
            data, seconds = judged(c, auth, slug, ROOT / "problems" / slug / file)
            problems = check(data, expected, args.gpu)
            failures += bool(problems)
            mark = "✓" if not problems else "✗"
            print(f"{mark} {slug} {file}: {data['verdict']} in {seconds:.1f} s "
                  f"(submit -> verdict){'; ' + '; '.join(problems) if problems else ''}")
            for t in data.get("throughput", []):
                ratio = "—" if t.get("ratio") is None else f"{t['ratio']:.2f}"
                print(f"    speed {t['name']:<12} {t['device']:<5} ratio {ratio:>5} "
                      f"(bar {t['min_ratio']})  {t['verdict']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
