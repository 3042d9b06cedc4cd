"""``python -m judge serve | worker | pack | make-admin`` (and ``admin``, ``problems``
from judge/cli_admin.py): the commands that need the web extras (``judge/cli.py`` adds
them when this module imports).

``serve`` is the embedded default: the web app in this process and ``--workers N`` worker
processes beside it, which talk to it over HTTP exactly like workers on other machines.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from judge.cli import UsageError, add_isolation_args
from judge.isolation import WARNING as NO_SANDBOX_WARNING
from judge.isolation import dev_mode_requested
from judge.package import ROOT

log = logging.getLogger("judge.serve")

FAST_EXIT_S = 10.0  # a worker that dies sooner than this after starting counts as failing
MAX_FAST_EXITS = 5
PACK_PREBUILD_DELAY_S = 10.0


def _verbose_logs() -> None:
    logging.getLogger().setLevel(logging.INFO)
    for noisy in ("httpx", "httpcore", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _sandbox_available() -> str | None:
    """None when the sandbox can be used, else why not."""
    import importlib.util

    if importlib.util.find_spec("sandbox.bwrap") is None:
        return "the sandbox (sandbox/bwrap.py) is not installed in this checkout"
    from sandbox.bwrap import BwrapLauncher, SandboxUnavailable

    try:  # a cold launcher probes bubblewrap, root, seccomp and the slot uid, then stops
        BwrapLauncher(warm=False).close()
    except SandboxUnavailable as e:
        return str(e)
    return None


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
    import uvicorn

    from web.main import create_app
    from web.settings import Settings

    no_sandbox = dev_mode_requested(args.no_sandbox)
    if no_sandbox:
        log.warning("%s", NO_SANDBOX_WARNING)
    else:
        why = _sandbox_available()
        if why:
            raise UsageError(f"{why}. Set it up with scripts/setup.sh (as root), or pass "
                             f"--no-sandbox to judge without isolation (development only).")
    _verbose_logs()
    overrides: dict = {"no_sandbox": no_sandbox}
    if args.data_dir:
        overrides["data_dir"] = Path(args.data_dir)
    if args.problems:
        overrides["problems_dir"] = Path(args.problems)
    settings = Settings(**overrides).prepare()
    app = create_app(settings)

    connect = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host
    server_url = f"http://{connect}:{args.port}"
    env = {**os.environ, "JUDGE_WORKER_TOKEN": settings.worker_token or "",
           "JUDGE_PROBLEMS_DIR": str(app.state.bank.root), "PYTHONUNBUFFERED": "1"}
    # Embedded workers read package versions from the server's bank (the same data folder)
    command = [sys.executable, "-m", "judge", "worker", "--server", server_url,
               "--gpu", args.gpu, "--store", str(settings.bank_dir.resolve())] + (
        ["--no-sandbox"] if no_sandbox else [])
    supervisor = Supervisor(args.workers, command, env)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="info",
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


def _prebuild_pack(app) -> None:
    from web.pack import PackError

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
    import uvicorn

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


def cmd_worker(args: argparse.Namespace) -> int:
    from judge.worker import main

    token = os.environ.get("JUDGE_WORKER_TOKEN", "")
    if args.token_file:
        token = Path(args.token_file).read_text().strip()
    if not token:
        raise UsageError("no worker token: set JUDGE_WORKER_TOKEN or pass --token-file (the "
                         "server keeps it in its data folder, file worker_token)")
    _verbose_logs()
    root = Path(args.problems) if args.problems else None
    return main(args.server, token, slot=args.slot, gpu=args.gpu, no_sandbox=args.no_sandbox,
                problems_root=root, name=args.name,
                store=Path(args.store) if args.store else None)


def cmd_pack(args: argparse.Namespace) -> int:
    """Every problem whose public part can be cut out goes in; one that cannot is left out
    loudly rather than costing learners the whole pack."""
    from judge.cli import _problems, make_launcher
    from judge.pack import public_tests_source, write_pack

    problems, left_out = [], []
    for problem in _problems(args.problems):
        try:
            public_tests_source(problem.read("tests.py"), problem.dir / "tests.py")
            problems.append(problem)
        except Exception as e:
            left_out.append(problem.slug)
            log.error("practice pack: leaving out %s: %s: %s", problem.slug,
                      type(e).__name__, e)
    if not problems:
        raise UsageError("no problem can go in the practice pack")
    launcher = make_launcher(args)
    try:
        write_pack(problems, launcher, Path(args.out))
    finally:
        launcher.close()
    print(f"wrote {args.out} ({len(problems)} problems"
          + (f"; left out: {', '.join(left_out)}" if left_out else "") + ")")
    return 0


def cmd_make_admin(args: argparse.Namespace) -> int:
    from sqlalchemy import update

    from web import db
    from web.models import User
    from web.settings import Settings

    settings = Settings(data_dir=Path(args.data_dir)) if args.data_dir else Settings()
    engine = db.make_engine(settings.prepare().db_url)
    db.migrate(engine)
    with engine.begin() as conn:
        res = conn.execute(update(User).where(User.username_key == args.username.casefold())
                           .values(is_admin=not args.revoke))
    if res.rowcount != 1:
        raise UsageError(f"no user {args.username!r}")
    print(f"{args.username}: admin {'revoked' if args.revoke else 'granted'}")
    return 0


def add_server_commands(sub) -> None:
    p = sub.add_parser("serve", help="serve the web app with local workers")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--workers", type=int, default=1,
                   help="local worker processes (default 1: speed checks are measured "
                        "honestly only when jobs do not compete for the CPU)")
    p.add_argument("--gpu", default="auto", help="auto (worker i takes GPU i), none")
    p.add_argument("--data-dir", help="database and files (default: $JUDGE_DATA_DIR or ./data)")
    p.add_argument("--access-log", action="store_true", help="log every request")
    p.add_argument("--no-pack-prebuild", action="store_true",
                   help="build the practice pack on its first download, not at start")
    add_isolation_args(p)
    p.set_defaults(fn=cmd_serve)

    p = sub.add_parser("worker", help="judge jobs for a server (token: $JUDGE_WORKER_TOKEN)")
    p.add_argument("--server", required=True, help="the web app's URL")
    p.add_argument("--slot", type=int, default=0, help="this worker's number on the machine")
    p.add_argument("--gpu", default="auto", help="auto (slot i takes GPU i), none, or an index")
    p.add_argument("--token-file", help="read the worker token from this file")
    p.add_argument("--name", help="shown to admins (default: host/slot/pid)")
    p.add_argument("--store", help="where problem versions are kept (default: "
                                   "~/.cache/torch-judge/bank; downloaded from the server "
                                   "when missing)")
    add_isolation_args(p)
    p.set_defaults(fn=cmd_worker)

    p = sub.add_parser("pack", help="build the practice pack (a zip) into OUT")
    p.add_argument("out")
    add_isolation_args(p)
    p.set_defaults(fn=cmd_pack)

    p = sub.add_parser("make-admin", help="grant (or --revoke) admin rights to a user")
    p.add_argument("username")
    p.add_argument("--revoke", action="store_true")
    p.add_argument("--data-dir", help="default: $JUDGE_DATA_DIR or ./data")
    p.set_defaults(fn=cmd_make_admin)

    from judge.cli_admin import add_admin_commands

    add_admin_commands(sub)
