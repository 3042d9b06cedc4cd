"""A deployment on loopback, as on several machines: a throwaway PostgreSQL cluster
(tests/web/postgres.py), web processes (``python -m judge serve --workers 0``) on ports of
their own sharing one database and one data folder (as behind a load balancer), and
worker processes (``python -m judge worker --server URL``) each with its own package cache
(``--store``, not the server's bank), its own sandbox slot and an empty problems folder,
so everything they judge is downloaded from the server as on another machine.

Every process can be killed (SIGKILL: it dies, nothing is handed back) and started again,
and the database restarted; tests/web/test_deployment.py and bench/chaos.py drive it.
Logs are kept per process under the folder given. Sandboxed as tests/web/served.py
decides (``--no-sandbox`` where the sandbox is not installed)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.web import postgres
from tests.web.served import ROOT, SANDBOXED, free_port

TOKEN = "chaos-worker-token"
PROBLEM = "padding-collate"
# padding-collate again, but "every case needs CUDA": CPU workers never take its jobs, so
# a test can play a worker of its own for it while the real ones run
GPU_ONLY = "padding-collate-gpu"


def problems_without_speed_checks(folder: Path, slugs: tuple[str, ...] = (PROBLEM,)) -> Path:
    """Copies of bundled problems without their ``[[throughput]]`` checks. A fault test
    overloads the machine on purpose, and speed checks measured there would say
    ``too_slow`` for honest code; what it checks is that every verdict arrives, once."""
    for slug in slugs:
        shutil.copytree(ROOT / "problems" / slug, folder / slug)
        toml = folder / slug / "problem.toml"
        text = toml.read_text()
        toml.write_text(re.split(r"(?m)^(?:#[^\n]*\n)*\[\[throughput\]\]", text)[0])
    gpu = folder / GPU_ONLY
    shutil.copytree(folder / PROBLEM, gpu)
    toml = gpu / "problem.toml"
    toml.write_text(toml.read_text().replace(f'slug = "{PROBLEM}"', f'slug = "{GPU_ONLY}"')
                    .replace("number = 1\n", "number = 901\n")
                    .replace('torch = ">=2.2"', 'torch = ">=2.2"\ncuda = true'))
    return folder


@dataclass
class Process:
    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    popen: subprocess.Popen | None = None
    starts: int = 0

    def start(self) -> None:
        self.starts += 1
        with open(self.log, "ab") as out:
            out.write(f"\n===== start {self.starts}: {' '.join(self.argv)}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL the process and whatever it started (its session)."""
        if self.popen is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=30)

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 30) -> str:
        return f"--- {self.name} ---\n" + "\n".join(self.text().splitlines()[-lines:])


@dataclass
class Deployment:
    folder: Path
    db: postgres.Cluster
    bin_dir: Path
    webs: list[Process] = field(default_factory=list)
    workers: list[Process] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    orphans: int = 0  # worker kills after which a process it started outlived it by 5 s

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{p}" for p in self.ports]

    @property
    def database_url(self) -> str:
        return self.db.url("postgres")

    def wait_web(self, i: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not self.webs[i].alive():
                raise RuntimeError(f"web {i} exited:\n{self.webs[i].tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.urls[i]}/healthz", timeout=2).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"web {i} did not answer in {timeout} s:\n"
                                   f"{self.webs[i].tail()}")
            time.sleep(0.2)

    def restart_web(self, i: int) -> float:
        """SIGKILL web process i, start it again, wait until it answers: seconds it was
        down."""
        started = time.monotonic()
        self.webs[i].kill()
        self.webs[i].start()
        self.wait_web(i)
        return time.monotonic() - started

    def registered(self, i: int) -> bool:
        """Worker i has registered since its last start."""
        text = self.workers[i].text()
        last = text.rsplit("===== start", 1)[-1]
        return " registered as #" in last

    def wait_workers(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not all(self.registered(i) for i in range(len(self.workers))):
            for w in self.workers:
                if not w.alive():
                    raise RuntimeError(f"{w.name} exited:\n{w.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError("workers did not register:\n" +
                                   "\n".join(w.tail() for w in self.workers))
            time.sleep(0.2)

    def start_workers(self) -> None:
        for w in self.workers:
            w.start()

    def kill_worker(self, i: int, restart: bool = True) -> bool:
        """SIGKILL worker i's process alone (mid-judging: its job is handed out again once
        its lease runs out), wait for everything it had started (its template, sandboxed
        runners) to die with it, clear what is left, and, like a supervisor, start it
        again on the same slot. Whether nothing outlived it by 5 s."""
        proc = self.workers[i]
        assert proc.popen is not None
        children = descendants(proc.popen.pid)
        os.kill(proc.popen.pid, signal.SIGKILL)
        proc.popen.wait(timeout=30)
        deadline = time.monotonic() + 5
        while alive(children) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = alive(children)
        self.orphans += bool(left)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.kill()
        if restart:
            proc.start()
        return not left

    def restart_database(self) -> float:
        """``pg_ctl restart -m fast``: every connection is cut. Seconds it took."""
        started = time.monotonic()
        postgres.restart(self.bin_dir, self.db)
        return time.monotonic() - started

    def logs(self) -> str:
        return "\n".join(p.tail() for p in [*self.webs, *self.workers])


def descendants(root: int) -> list[int]:
    """Every process below ``root``, from /proc."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        kids = [c for c, p in parent.items() if p == pid]
        found += kids
        frontier += kids
    return found


def alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (zombies count as gone)."""
    left = []
    for pid in pids:
        with contextlib.suppress(OSError, IndexError):
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "Z":
                left.append(pid)
    return left


def stop_all(processes: list[Process], grace_s: float = 10.0) -> None:
    """SIGTERM all at once (workers give their jobs back), SIGKILL what is left after
    ``grace_s``."""
    for p in processes:
        if p.alive():
            assert p.popen is not None
            p.popen.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for p in processes:
        if p.popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        p.kill()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


@contextlib.contextmanager
def deployment(folder: Path, *, webs: int = 2, workers: int = 3,
               worker_servers: list[int] | None = None, settings: dict[str, str] | None = None,
               start_workers: bool = True, wait_workers: bool = True
               ) -> Iterator[Deployment]:
    """Start it all (web i on its own port; worker i posting to web
    ``worker_servers[i]``, default web 0), yield it, stop it all."""
    bin_dir = postgres.binaries()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (scripts/setup.sh --test installs it)")
    folder.mkdir(parents=True, exist_ok=True)
    problems = problems_without_speed_checks(folder / "problems")
    isolation = [] if SANDBOXED else ["--no-sandbox"]
    with postgres.cluster(bin_dir) as db:
        dep = Deployment(folder, db, bin_dir)
        web_env = _env(JUDGE_DATABASE_URL=db.url("postgres"), JUDGE_WORKER_TOKEN=TOKEN,
                       JUDGE_SECRET_KEY="chaos-secret", JUDGE_PROBLEMS_DIR=str(problems),
                       **{f"JUDGE_{k.upper()}": v for k, v in (settings or {}).items()})
        for i in range(webs):
            port = free_port()
            dep.ports.append(port)
            dep.webs.append(Process(
                f"web{i}", [sys.executable, "-m", "judge", "serve", "--host", "127.0.0.1",
                            "--port", str(port), "--workers", "0", "--data-dir",
                            str(folder / "data"), "--no-pack-prebuild", *isolation],
                web_env, folder / f"web{i}.log"))
        servers = worker_servers or [0] * workers
        for i in range(workers):
            home = folder / f"worker{i}"
            (home / "problems").mkdir(parents=True)  # empty: only what it downloads
            dep.workers.append(Process(
                f"worker{i}", [sys.executable, "-m", "judge", "--problems",
                               str(home / "problems"), "worker", "--server",
                               dep.urls[servers[i]], "--slot", str(i), "--gpu", "none",
                               "--name", f"chaos-w{i}", "--store", str(home / "store"),
                               *isolation],
                _env(JUDGE_WORKER_TOKEN=TOKEN), home / "worker.log"))
        try:
            dep.webs[0].start()  # alone: it creates the schema and seeds the bank
            dep.wait_web(0)
            for web in dep.webs[1:]:
                web.start()
            if start_workers:
                dep.start_workers()
            for i in range(1, len(dep.webs)):
                dep.wait_web(i)
            if start_workers and wait_workers:
                dep.wait_workers()
            yield dep
        finally:
            stop_all([*dep.workers, *dep.webs])
