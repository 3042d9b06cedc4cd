"""The attack suite's world: a sandboxed launcher per xdist worker, and canaries planted
where a submission must not reach — a secret in the worker's environment, a world-readable
secret file and a world-writable folder on the host, a victim file for planted links, and a
listener on the host's loopback."""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.sandbox.helpers import ROOT, make_launcher

# The attacks know these paths and try them (one set per xdist worker: gw0, gw1, ... main).
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
CANARY_DIR = Path(f"/tmp/tj-attack-canary-{WORKER}")
OUT_DIR = Path(f"/tmp/tj-attack-out-{WORKER}")
VICTIM_DIR = Path(f"/tmp/tj-attack-victim-{WORKER}")
PORTS = range(47001, 47011)


@dataclass
class Canaries:
    env_secret: str
    file_secret: str
    victim: Path
    victim_text: str
    out_dir: Path
    connections: list[bytes] = field(default_factory=list)
    port: int = 0
    code_hashes: dict[str, str] = field(default_factory=dict)

    def secrets(self) -> list[str]:
        return [self.env_secret, self.file_secret, "TJCANARY"]


def _hashes() -> dict[str, str]:
    """The judge's code and the problems: nothing may change them."""
    found = {}
    for folder in (ROOT / "sandbox", ROOT / "judge", ROOT / "problems" / "padding-collate"):
        for path in sorted(folder.rglob("*.py")):
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _listen(canaries: Canaries) -> socket.socket:
    for port in PORTS:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind(("127.0.0.1", port))
        except OSError:
            server.close()
            continue
        server.listen(16)
        canaries.port = port

        def accept(server: socket.socket = server) -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    canaries.connections.append(conn.recv(100) or b"(connected)")

        threading.Thread(target=accept, daemon=True).start()
        return server
    pytest.skip(f"no free loopback port in {PORTS}")


@pytest.fixture(scope="session")
def canaries():
    token = secrets.token_hex(8)
    c = Canaries(env_secret=f"TJCANARY-env-{token}", file_secret=f"TJCANARY-file-{token}",
                 victim=VICTIM_DIR / "victim.txt", victim_text=f"victim {token}",
                 out_dir=OUT_DIR)
    for folder, mode in ((CANARY_DIR, 0o755), (OUT_DIR, 0o777), (VICTIM_DIR, 0o755)):
        folder.mkdir(exist_ok=True)
        os.chmod(folder, mode)  # as open as can be: only the sandbox keeps them out
    (CANARY_DIR / "secret.txt").write_text(c.file_secret)
    os.chmod(CANARY_DIR / "secret.txt", 0o644)
    c.victim.write_text(c.victim_text)
    os.chmod(c.victim, 0o666)
    # The worker's secrets: in the environment before the launcher (and its template) starts.
    old = os.environ.get("JUDGE_WORKER_TOKEN")
    os.environ["JUDGE_WORKER_TOKEN"] = c.env_secret
    server = _listen(c)
    c.code_hashes = _hashes()
    yield c
    server.close()
    if old is None:
        os.environ.pop("JUDGE_WORKER_TOKEN", None)
    else:
        os.environ["JUDGE_WORKER_TOKEN"] = old
    for folder in (CANARY_DIR, OUT_DIR, VICTIM_DIR):
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def attack_launcher(canaries):
    launcher = make_launcher()
    if launcher.template is not None:
        launcher.template.wait_ready()
    yield launcher
    launcher.close()


@pytest.fixture(scope="session")
def code_hashes():
    return _hashes
