"""Shared by tests/sandbox and tests/attacks: launchers per xdist worker, running code in
the sandbox, and looking for what a job may have left behind."""

from __future__ import annotations

import os
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from judge.session import RunnerSession
from sandbox.launch import Job, Limits

ROOT = Path(__file__).resolve().parent.parent.parent


def slot() -> int:
    """A sandbox slot per pytest-xdist worker (gw0 -> 1, gw1 -> 2, ...; 1 without xdist),
    so that parallel workers never share a uid. Slot 0 is left to a real worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return 1 + (int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0)


def make_launcher(**kwargs: Any):
    """A BwrapLauncher for this worker's slot, or a skip that says why there is none.
    With JUDGE_REQUIRE_SANDBOX=1 (CI) an unavailable sandbox fails instead."""
    required = os.environ.get("JUDGE_REQUIRE_SANDBOX") == "1"

    def unavailable(why: str):
        if required:
            pytest.fail(f"the sandbox is required here (JUDGE_REQUIRE_SANDBOX=1): {why}")
        pytest.skip(why)

    if os.geteuid() != 0:
        unavailable("needs root (to switch to the sandbox uids; see scripts/install_sandbox.sh)")
    from sandbox.bwrap import BwrapLauncher, SandboxUnavailable

    try:
        return BwrapLauncher(slot(), **kwargs)
    except SandboxUnavailable as e:
        unavailable(f"bubblewrap sandbox unavailable: {e}")


def job_folder(root: Path, code: str, role: str = "sub") -> Path:
    """A grader-like job folder: ``<root>/judge-XXXX/<role>/submission.py``."""
    top = Path(tempfile.mkdtemp(prefix="judge-", dir=root))
    folder = top / role
    folder.mkdir()
    (folder / "submission.py").write_text(textwrap.dedent(code))
    return folder


@contextmanager
def session(launcher, folder: Path, limits: Limits | None = None, names=("f",),
            device: str = "cpu", fixture: str | None = None) -> Iterator[RunnerSession]:
    """A started, ready runner on ``folder`` (with ``fixture``'s code as its scenarios),
    closed afterwards."""
    hello = {"submission": folder / "submission.py", "names": list(names), "threads": 1,
             "device": device}
    if fixture is not None:
        (folder / "judge_fixture.py").write_text(textwrap.dedent(fixture))
        hello["fixture"] = folder / "judge_fixture.py"
    s = RunnerSession(launcher, Job(folder, limits or Limits(), device), hello)
    s.start()
    try:
        s.ready()
        yield s
    finally:
        s.close()


def call(launcher, tmp_path: Path, code: str, *args: Any, limits: Limits | None = None,
         fn: str = "f", device: str = "cpu") -> Any:
    """Run ``fn(*args)`` of ``code`` in a fresh sandboxed runner; return its value."""
    folder = job_folder(tmp_path, code)
    with session(launcher, folder, limits, names=(fn,), device=device) as s:
        return s.call("sub", fn, list(args), {}).value


def processes_of(uid: int) -> set[int]:
    """Live (not zombie) processes whose real uid is ``uid``."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if int(status["Uid"].split()[0]) == uid and not status["State"].strip().startswith("Z"):
            found.add(int(entry))
    return found


def _stat(pid: int) -> tuple[int, str]:
    """(parent pid, memory cgroup) of a process."""
    with open(f"/proc/{pid}/stat") as f:
        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{pid}/cgroup") as f:
        memory = next((line for line in f if ":memory:" in line), "")
    return ppid, memory


def _templates(uid: int) -> dict[int, str]:
    """The warm templates running as ``uid``: pid -> memory cgroup."""
    found = {}
    for pid in processes_of(uid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            ppid, memory = _stat(pid)
            with open(f"/proc/{ppid}/cmdline", "rb") as f:
                parent = f.read()
        except OSError:
            continue
        def is_template(argv: bytes) -> bool:
            return argv.split(b"\0")[1:3] == [b"-m", b"sandbox.forkserver"]

        if is_template(cmd) and not is_template(parent):  # not a zygote: the template
            found[pid] = memory
    return found


def leftovers(launcher, before: set[int], grace_s: float = 3.0) -> set[int]:
    """Processes of the launcher's uid that were not there ``before``, other than the
    pools of idle zygotes of the warm templates of that uid (children of a template, in its
    cgroup, made to replace the ones jobs used). Waits up to ``grace_s`` for them to go."""
    import time

    deadline = time.monotonic() + grace_s
    while True:
        templates = _templates(launcher.uid)
        found = set()
        for pid in processes_of(launcher.uid) - before:
            try:
                ppid, memory = _stat(pid)
            except OSError:
                continue
            if templates.get(ppid) == memory:
                continue  # an idle zygote or its init
            found.add(pid)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def job_mounts() -> list[str]:
    """Mount points of job-folder tmpfs (named ``tj-job``) in this mount namespace."""
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if " - tmpfs tj-job " in line]
