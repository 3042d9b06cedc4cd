"""Starting a worker (``python -m judge worker``): detect what this machine has, choose
its GPU, make the launcher and run judge.worker.Worker's loop until it is stopped."""

from __future__ import annotations

import json
import logging
import os
import platform
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.problem_store import Problems
from judge.worker import DEFAULT_STORE, Worker
from judge.worker_client import Fatal, WorkerClient

log = logging.getLogger("judge.worker")


def detect_capabilities() -> Callable[[], dict[str, Any]]:
    """Start judge.capabilities.detect() in a child process (so that this process never
    initialises CUDA: its runners must be able to); call the result to get it."""
    try:
        child = subprocess.Popen([sys.executable, "-m", "judge.capabilities"],
                                 stdout=subprocess.PIPE, text=True)
    except OSError as e:
        log.warning("could not detect capabilities: %s", e)
        return lambda: {"torch": None, "devices": []}

    def result() -> dict[str, Any]:
        try:
            out, _ = child.communicate(timeout=120)
            return json.loads(out)
        except (subprocess.SubprocessError, ValueError) as e:
            child.kill()
            log.warning("could not detect capabilities: %s", e)
            return {"torch": None, "devices": []}

    return result


def choose_gpu(spec: str, slot: int, capabilities: dict[str, Any]) -> int | None:
    """--gpu auto: slot i takes GPU i when there is one; none; or an index."""
    if spec == "none":
        return None
    devices = capabilities.get("devices") or []
    index = slot if spec == "auto" else int(spec)
    if index >= len(devices):
        if spec != "auto":
            raise Fatal(f"--gpu {spec}: this machine has {len(devices)} CUDA device(s)")
        return None
    return index


def main(server: str, token: str, *, slot: int = 0, gpu: str = "auto",
         no_sandbox: bool = False, problems_root: Path | None = None,
         name: str | None = None, store: Path | None = None) -> int:
    detected = detect_capabilities()
    import judge.grader  # noqa: F401  (torch, while the child detects: the first job is quick)
    from judge.isolation import make_launcher

    capabilities = detected()
    try:
        index = choose_gpu(gpu, slot, capabilities)
    except Fatal as e:
        log.error("%s", e)
        return 2
    if index is not None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        choices = visible.split(",") if visible else None
        # One GPU job per GPU at a time: this worker and its runners see only its GPU.
        os.environ["CUDA_VISIBLE_DEVICES"] = choices[index] if choices else str(index)
        capabilities = {**capabilities, "gpu_index": index}
    try:
        launcher = make_launcher(no_sandbox, slot)
    except Exception as e:
        log.error("cannot start the sandbox (%s: %s). Install it with scripts/setup.sh (as "
                  "root), or pass --no-sandbox for development only.", type(e).__name__, e)
        return 2
    client = WorkerClient(server, token)
    problems = Problems(problems_root, store=store or DEFAULT_STORE, fetch=client.download)
    worker = Worker(client, launcher, problems,
                    name=name or f"{platform.node()}/slot{slot}/pid{os.getpid()}",
                    gpu=index, capabilities=capabilities)

    def stop(_signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        worker.run()
    except KeyboardInterrupt:
        return 0
    except Fatal as e:
        log.error("%s", e)
        return 2
    finally:
        launcher.close()
    return 0
