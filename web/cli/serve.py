"""``python -m judge serve``: the embedded default. The web app runs in this process and
``--workers N`` worker processes beside it, which talk to it over HTTP exactly like
workers on other machines (``python -m judge worker``)."""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import uvicorn

from judge.cli_base import UsageError
from judge.cli_worker import quiet_http_logs
from judge.isolation import WARNING as NO_SANDBOX_WARNING
from judge.isolation import dev_mode_requested, sandbox_unavailable
from judge.package import ROOT
from web.main import create_app, ready_to_serve
from web.practice_pack import PackError
from web.settings import Settings

log = logging.getLogger("judge.serve")

FAST_EXIT_S = 10.0  # a worker that dies sooner than this after starting counts as failing
MAX_FAST_EXITS = 5
PACK_PREBUILD_DELAY_S = 10.0


class Supervisor(threading.Thread):
    """Keeps N local worker processes running; restarts one that dies (not one that keeps
    dying at once, nor one that exits with status 2: a configuration error)."""

    def __init__(self, count: int, command: list[str], env: dict[str, str]) -> None:
        super().__init__(name="workers", daemon=True)
        self.count, self.command, self.env = count, command, env
        self.procs: dict[int, subprocess.Popen] = {}
        self.started_at: dict[int, float] = {}
        self.fast_exits: dict[int, int] = {}
        self.given_up: set[int] = set()
        self.stopping = threading.Event()

    def spawn(self, slot: int) -> None:
        cmd = [*self.command, "--slot", str(slot)]
        self.procs[slot] = subprocess.Popen(cmd, cwd=ROOT, env=self.env)
        self.started_at[slot] = time.monotonic()
        log.info("started worker %d (pid %d)", slot, self.procs[slot].pid)

    def run(self) -> None:
        for slot in range(self.count):
            self.spawn(slot)
        while not self.stopping.wait(1.0):
            for slot, proc in list(self.procs.items()):
                code = proc.poll()
                if code is None or slot in self.given_up or self.stopping.is_set():
                    continue
                quick = time.monotonic() - self.started_at[slot] < FAST_EXIT_S
                self.fast_exits[slot] = self.fast_exits.get(slot, 0) + 1 if quick else 0
                if code == 2 or self.fast_exits[slot] >= MAX_FAST_EXITS:
                    self.given_up.add(slot)
                    log.error("worker %d exited with status %d; not restarting it (see its "
                              "log above)", slot, code)
                    continue
                log.warning("worker %d exited with status %d; restarting it", slot, code)
                self.spawn(slot)

    def stop(self) -> None:
        self.stopping.set()
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()  # the worker releases its job and exits
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def cmd_serve(args: argparse.Namespace) -> int:
    no_sandbox = dev_mode_requested(args.no_sandbox)
    if no_sandbox:
        log.warning("%s", NO_SANDBOX_WARNING)
    else:
        why = sandbox_unavailable()
        if why:
            raise UsageError(f"{why}. Set it up with scripts/setup.sh (as root), or pass "
                             f"--no-sandbox to judge without isolation (development only).")
    quiet_http_logs()
    overrides: dict = {"no_sandbox": no_sandbox}
    if args.data_dir:
        overrides["data_dir"] = Path(args.data_dir)
    if args.problems:
        overrides["problems_dir"] = Path(args.problems)
    if args.web_processes < 1:
        raise UsageError("--web-processes must be at least 1")
    settings = Settings(**overrides).prepare()
    app = create_app(settings)  # migrates and seeds once, before any other process starts

    connect = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host
    server_url = f"http://{connect}:{args.port}"
    env = {**os.environ, "JUDGE_WORKER_TOKEN": settings.worker_token or "",
           "JUDGE_PROBLEMS_DIR": str(app.state.catalog.root), "PYTHONUNBUFFERED": "1"}
    # Embedded workers read package versions from the server's bank (the same data folder)
    command = [sys.executable, "-m", "judge", "worker", "--server", server_url,
               "--gpu", args.gpu, "--store", str(settings.bank_dir.resolve())] + (
        ["--no-sandbox"] if no_sandbox else [])
    supervisor = Supervisor(args.workers, command, env)
    if args.web_processes > 1:
        return _serve_processes(args, settings, supervisor)
    config = uvicorn.Config(ready_to_serve(app), host=args.host, port=args.port,
                            log_level="info",
                            timeout_graceful_shutdown=3, access_log=args.access_log)
    server = make_server(config, on_exit=supervisor.stop)
    log.info("serving on %s with %d worker(s); data in %s", server_url, args.workers,
             settings.data_dir.resolve())
    if args.workers:
        supervisor.start()
    if not args.no_pack_prebuild:
        # The practice pack runs the reference: build it soon (niced), not on the first
        # download, once the workers have had time to start.
        prebuild = threading.Timer(PACK_PREBUILD_DELAY_S, _prebuild_pack, args=(app,))
        prebuild.daemon = True
        prebuild.start()
    try:
        server.run()
    finally:
        supervisor.stop()
    return 0


def _serve_processes(args: argparse.Namespace, settings: Settings,
                     supervisor: Supervisor) -> int:
    """uvicorn's process manager: ``--web-processes`` processes on one socket, each building
    the app from the environment (this process's settings, exported). Their hubs reach
    each other through the database's relay (PostgreSQL) or Unix sockets (SQLite,
    web.local_relay). The practice pack is built on its first download."""
    os.environ.update({
        "JUDGE_DATA_DIR": str(settings.data_dir.resolve()),
        "JUDGE_NO_SANDBOX": "1" if settings.no_sandbox else "0",
        **({"JUDGE_PROBLEMS_DIR": str(settings.problems_dir.resolve())}
           if settings.problems_dir else {}),
    })
    log.info("serving on http://%s:%d with %d web processes and %d worker(s); data in %s",
             args.host, args.port, args.web_processes, args.workers,
             settings.data_dir.resolve())
    if args.workers:
        supervisor.start()
    try:
        uvicorn.run("web.main:app_from_env", factory=True, host=args.host, port=args.port,
                    workers=args.web_processes, log_level="info",
                    timeout_graceful_shutdown=3, access_log=args.access_log)
    finally:
        supervisor.stop()
    return 0


def _prebuild_pack(app) -> None:
    try:
        app.state.pack.get()
    except PackError:
        pass  # logged by the builder; a download retries
    except Exception:
        log.exception("building the practice pack failed")


def make_server(config, on_exit):
    """uvicorn's Server, except that on SIGTERM/SIGINT the workers stop first (releasing
    their jobs over HTTP while the app still answers), then the app shuts down and ``serve``
    exits 0. A second signal hurries it up as usual."""
    class Server(uvicorn.Server):
        stopping = False

        def handle_exit(self, sig, frame) -> None:
            if self.stopping:
                return super().handle_exit(sig, frame)
            self.stopping = True

            def stop() -> None:
                on_exit()
                self.should_exit = True

            threading.Thread(target=stop, name="stopping", daemon=True).start()

    return Server(config)
