"""Confining the current process just before it runs a submission.

Runs inside the sandbox, in our code, before any of the learner's: on the cold path as the
entry point that bubblewrap starts (``python -m sandbox.confine``: rlimits, then the
runner; bubblewrap itself already dropped capabilities, set no_new_privs and installed the
seccomp filter), and on the warm path from the fork server (:func:`confine_job` does all of
it, since there the process was forked from a template that still holds the capabilities it
needs to build each job's namespaces).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
from typing import Any

from sandbox import linux

MiB = 1024 * 1024


def apply_rlimits(limits: dict[str, Any]) -> None:
    """Lower this process's rlimits (they are inherited by all it starts).

    ``limits``: ``cpu_s``, ``file_mb``, ``nproc``, ``nofile``, and ``memory_mb`` with
    ``address_space`` true for an RLIMIT_AS (CPU jobs only: CUDA reserves huge ranges).
    A hard limit already below the wanted one is kept, never raised.
    """

    def lower(res: int, soft: int, hard: int | None = None) -> None:
        hard = soft if hard is None else hard
        _, old_hard = resource.getrlimit(res)
        if old_hard != resource.RLIM_INFINITY:
            hard = min(hard, old_hard)
            soft = min(soft, hard)
        resource.setrlimit(res, (soft, hard))

    cpu = max(1, int(float(limits["cpu_s"]) + 0.999))
    # The soft limit sends SIGXCPU; the hard one, a second later, is a SIGKILL that a
    # handler cannot stop.
    lower(resource.RLIMIT_CPU, cpu, cpu + 1)
    lower(resource.RLIMIT_CORE, 0)
    lower(resource.RLIMIT_FSIZE, int(limits["file_mb"]) * MiB)
    lower(resource.RLIMIT_NOFILE, int(limits["nofile"]))
    lower(resource.RLIMIT_NPROC, int(limits["nproc"]))
    if limits.get("address_space"):
        lower(resource.RLIMIT_AS, int(limits["memory_mb"]) * MiB)


def prefer_as_oom_victim() -> None:
    """Make this process (and what it starts) the first the OOM killer picks, before the
    sandbox's own init that reports how the job ended. Raising it needs no privilege."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def _own_user_namespace() -> None:
    """Move into a user namespace of our own that maps only our uid and gid.

    It owns nothing (the job's mount, pid and network namespaces belong to the template's),
    so the capabilities it grants are dropped right after without having been of use. What
    it buys: RLIMIT_NPROC is counted per user namespace, so a fork bomb in one job cannot use
    up the process count of the other jobs running as the same uid.
    """
    uid, gid = os.getuid(), os.getgid()
    linux.unshare(linux.CLONE_NEWUSER)
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def confine_job(limits: dict[str, Any], job_bpf: bytes) -> None:
    """Everything the warm path does to a freshly forked job process, in this order:
    its own user namespace, no capabilities, no_new_privs, OOM preference, rlimits and,
    last (it forbids the calls above), the job's seccomp filter."""
    _own_user_namespace()
    linux.drop_capabilities()
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    prefer_as_oom_victim()
    apply_rlimits(limits)
    linux.load_seccomp(job_bpf)


def main(argv: list[str] | None = None) -> None:
    """Cold path: ``python -m sandbox.confine --limits JSON --fd N`` inside bubblewrap."""
    parser = argparse.ArgumentParser(description="apply rlimits, then run the runner")
    parser.add_argument("--limits", required=True, help="a JSON object, see apply_rlimits")
    parser.add_argument("--fd", type=int, required=True, help="the protocol socket's fd")
    args = parser.parse_args(argv)
    prefer_as_oom_victim()
    apply_rlimits(json.loads(args.limits))
    from sandbox import runner  # torch is imported under the limits, as the job will be

    runner.main(["--fd", str(args.fd)])


if __name__ == "__main__":
    main()
