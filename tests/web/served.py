"""A real ``python -m judge serve`` for the smoke and browser tests: a free port on
127.0.0.1, a temporary data folder, the bundled problems.

Isolation: sandboxed when the sandbox is installed in this checkout (``sandbox/bwrap.py``),
else ``--no-sandbox`` (loudly) so these tests run wherever the judge core does.
JUDGE_TEST_SANDBOX=1 insists on the sandbox, JUDGE_TEST_SANDBOX=0 turns it off."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
def _sandboxed() -> bool:
    choice = os.environ.get("JUDGE_TEST_SANDBOX", "auto")
    if choice in ("0", "1"):
        return choice == "1"
    from judge.isolation import sandbox_unavailable

    return sandbox_unavailable() is None


SANDBOXED = _sandboxed()


@dataclass
class Served:
    url: str
    process: subprocess.Popen
    log: Path
    data_dir: Path

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(tmp: Path, *, workers: int = 1, startup_s: float = 90,
            args: tuple[str, ...] = (), env: dict[str, str] | None = None
            ) -> Iterator[Served]:
    port = free_port()
    log = tmp / "serve.log"
    cmd = [sys.executable, "-m", "judge", "serve", "--host", "127.0.0.1", "--port", str(port),
           "--workers", str(workers), "--data-dir", str(tmp / "data"), *args]
    if not SANDBOXED:
        cmd.append("--no-sandbox")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")},
           **(env or {})}
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    served = Served(f"http://127.0.0.1:{port}", process, log, tmp / "data")
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"serve exited with {process.returncode}:\n"
                                   f"{served.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{served.url}/api/problems", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve did not answer in {startup_s} s:\n"
                                   f"{served.log_tail()}")
            time.sleep(0.2)
        yield served
    finally:
        stop(served)


def stop(served: Served) -> int:
    """SIGTERM like a service manager, then make sure nothing of it is left."""
    process = served.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # any worker or runner it left behind
    return process.returncode


def read_events(url: str, headers: dict, timeout: float = 180) -> list[dict]:
    """Follow a submission's event stream to its end."""
    import json

    events = []
    with httpx.stream("GET", url, headers=headers, timeout=timeout) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    return events
