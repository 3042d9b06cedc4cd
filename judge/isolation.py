"""Choosing how submissions are isolated.

The sandbox is the default everywhere. Running without it takes an explicit option
(``--no-sandbox`` or ``JUDGE_NO_SANDBOX=1`` for development), and it is logged loudly:
without the sandbox a submission can read and change anything this user can.
"""

from __future__ import annotations

import logging
import os

from sandbox.launch import Launcher, PlainLauncher

log = logging.getLogger("judge.isolation")

WARNING = ("SANDBOX DISABLED: submissions run as plain child processes with this user's "
           "rights, and the tests.py of every package that did not ship with the judge "
           "(uploads) runs in this process. Use this for development only, never to judge "
           "other people's code or packages.")


def dev_mode_requested(flag: bool = False) -> bool:
    return flag or os.environ.get("JUDGE_NO_SANDBOX") == "1"


def plain_launcher() -> Launcher:
    log.warning(WARNING)
    return PlainLauncher()


def sandbox_launcher(slot: int | None = None) -> Launcher:
    """The bubblewrap sandbox for worker slot ``slot`` (by default ``JUDGE_SANDBOX_SLOT``,
    else 0): its runners run as that slot's own uid. Exits with a clear message where the
    machine cannot run it: never an unsandboxed fallback."""
    from sandbox.bwrap import BwrapLauncher, SandboxUnavailable, slot_from_env

    try:
        return BwrapLauncher(slot_from_env() if slot is None else slot)
    except SandboxUnavailable as e:
        raise SystemExit(f"error: the sandbox is unavailable: {e}\n(for development only, "
                         "--no-sandbox or JUDGE_NO_SANDBOX=1 runs without it)") from None


def sandbox_unavailable() -> str | None:
    """None when this machine can run the sandbox, else why not (a cold launcher probes
    bubblewrap, root, seccomp and the slot uid, then stops)."""
    import importlib.util

    if importlib.util.find_spec("sandbox.bwrap") is None:
        return "the sandbox (sandbox/bwrap.py) is not installed in this checkout"
    from sandbox.bwrap import BwrapLauncher, SandboxUnavailable

    try:
        BwrapLauncher(warm=False).close()
    except SandboxUnavailable as e:
        return str(e)
    return None


def make_launcher(no_sandbox: bool = False, slot: int | None = None) -> Launcher:
    """The launcher every command and worker judges with: the sandbox for worker slot
    ``slot`` (its runners run as that slot's own uid; by default ``JUDGE_SANDBOX_SLOT``,
    else 0), or, only when asked for (``no_sandbox``, ``JUDGE_NO_SANDBOX=1``), the plain
    launcher, loudly. Import this module lazily: it imports torch (through the sandbox)."""
    if dev_mode_requested(no_sandbox):
        return plain_launcher()
    return sandbox_launcher(slot)
