"""Parts of the sandbox that need no sandbox to test: how an end maps to an Exit, the
seccomp programs, GPU leases, the root's layout, the template's report."""

from __future__ import annotations

import os
import signal
import socket
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from judge.session import lost_verdict
from judge.verdict import Verdict
from sandbox import gpu, seccomp
from sandbox import layout as layout_module
from sandbox.channel import Channel
from sandbox.launch import Job, Limits, RunnerProcess, Usage
from sandbox.layout import Layout, LayoutError, reachable


def finished(cls, status: int, usage: Usage, limits: Limits, oom: bool = False,
             kill: str | None = None):
    a, b = socket.socketpair()
    b.close()
    runner = cls.__new__(cls)
    RunnerProcess.__init__(runner, 1, Channel(a), Job(Path("/nonexistent"), limits),
                           Path("/job"))
    runner._out_of_memory = lambda: oom  # type: ignore[method-assign]
    if kill:
        runner._kill_reason = kill
    runner._finished(status, usage)
    return runner.wait(0)


def cold_cls():
    from sandbox.bwrap import ColdRunner

    class Cold(ColdRunner):
        def _release(self) -> None:
            pass

    return Cold


SIGNALED_KILL = signal.SIGKILL  # a raw wait status: killed by SIGKILL


@pytest.mark.parametrize(("status", "usage", "oom", "kill", "reason", "verdict"), [
    (0, Usage(0.1), False, None, "exited", Verdict.RUNTIME_ERROR),
    (3 << 8, Usage(0.1), False, None, "exited", Verdict.RUNTIME_ERROR),
    (signal.SIGSEGV, Usage(0.1), False, None, "signaled", Verdict.RUNTIME_ERROR),
    (signal.SIGXCPU, Usage(10.0), False, None, "cpu", Verdict.TIME_LIMIT_EXCEEDED),
    (SIGNALED_KILL, Usage(10.0), False, None, "cpu", Verdict.TIME_LIMIT_EXCEEDED),
    (SIGNALED_KILL, Usage(0.5), True, None, "memory", Verdict.MEMORY_LIMIT_EXCEEDED),
    (SIGNALED_KILL, Usage(0.5), False, None, "signaled", Verdict.RUNTIME_ERROR),
    (SIGNALED_KILL, Usage(0.5), True, "wall", "wall", Verdict.TIME_LIMIT_EXCEEDED),
    (SIGNALED_KILL, Usage(0.5), False, "output", "output", Verdict.OUTPUT_LIMIT_EXCEEDED),
])
def test_how_an_end_maps_to_a_verdict(status, usage, oom, kill, reason, verdict):
    ex = finished(RunnerProcess, status, usage, Limits(cpu_s=10.0), oom, kill)
    assert ex is not None and ex.reason == reason
    assert lost_verdict(ex, 10.0, 5.0).verdict is verdict


@pytest.mark.parametrize(("code", "reason", "sig"), [
    (128 + signal.SIGKILL, "signaled", signal.SIGKILL),  # bwrap's way to say "killed by"
    (128 + signal.SIGXCPU, "cpu", signal.SIGXCPU),
    (1, "exited", None),
])
def test_bwrap_exit_codes_read_as_signals(code, reason, sig):
    ex = finished(cold_cls(), code << 8, Usage(0.2), Limits(cpu_s=10.0))
    assert ex is not None and ex.reason == reason and ex.signal == sig


def test_seccomp_programs_compile():
    if not seccomp.available():
        pytest.skip("libseccomp2 is not installed")
    job, template = seccomp.job_filter(), seccomp.template_filter()
    assert len(job) % 8 == 0 and len(template) % 8 == 0
    assert len(job) > len(template)  # the job's also denies the mount and namespace calls


def test_gpu_leases_are_shared_within_a_job_and_exclusive_across(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu, "LOCKS", tmp_path)
    leases = gpu.GpuLeases([gpu.Gpu(0, "GPU-a", "A"), gpu.Gpu(1, "GPU-b", "B")])
    sub = leases.acquire("/tmp/judge-1")
    ref = leases.acquire("/tmp/judge-1")  # the reference of the same job: same GPU
    other = leases.acquire("/tmp/judge-2")
    assert sub.gpu == ref.gpu != other.gpu
    got: list[gpu.Lease] = []
    waiter = threading.Thread(target=lambda: got.append(leases.acquire("/tmp/judge-3")))
    waiter.start()
    time.sleep(0.5)
    assert not got  # both GPUs are leased
    sub.release()
    time.sleep(0.5)
    assert not got  # the job still holds it through its reference's runner
    ref.release()
    waiter.join(5)
    assert got and got[0].gpu == sub.gpu
    with pytest.raises(TimeoutError):
        leases.acquire("/tmp/judge-4", timeout_s=0.3)


def test_job_key_is_the_grading_jobs_folder():
    assert gpu.job_key(Path("/tmp/judge-abc/sub")) == gpu.job_key(Path("/tmp/judge-abc/ref"))


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_reachable_follows_mode_bits():
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp())  # under /tmp (1777), unlike pytest's 0700 tmp_path
    try:
        _reachable_cases(base)
    finally:
        shutil.rmtree(base)


def _reachable_cases(base: Path) -> None:
    closed = base / "closed"
    inner = closed / "inner"
    inner.mkdir(parents=True)
    os.chmod(base, 0o755)
    os.chmod(closed, 0o700)
    os.chmod(inner, 0o755)
    assert not reachable(inner, 61000, 61000)
    os.chmod(closed, 0o711)
    assert reachable(inner, 61000, 61000)
    os.chmod(inner, 0o700)
    assert not reachable(inner, 61000, 61000)
    os.chown(inner, 61000, 61000)
    assert reachable(inner, 61000, 61000)


@pytest.mark.skipif(os.geteuid() != 0, reason="the layout's layers are mounted as root")
def test_layout_binds_the_interpreter_and_the_package_only():
    layout = Layout.build(61000, 61000, f"{os.getpid()}-test-units")
    try:
        inside = {i for _, i in layout.binds}
        assert "/usr" in inside and "/opt/torch-judge/sandbox" in inside
        assert "/opt/venv/lib" in inside or sys.prefix == sys.base_prefix
        root = Path(__file__).resolve().parents[2]
        for secret in (root / "problems", root / "judge", root / "web"):
            for host, _ in layout.binds:  # neither the folder nor one above it
                assert host != secret and host not in secret.parents, (host, secret)
        # Nothing inside is named after a host folder.
        for _, where in layout.binds + [(None, i) for _, i in layout.symlinks]:
            assert not where.startswith((str(root), sys.prefix, sys.base_prefix)), where
        env = layout.env()
        assert env["PYTHONPATH"] == "/opt/torch-judge" and env["OMP_NUM_THREADS"] == "1"
        assert Path(layout.python).name.startswith("python")
        assert layout.python.startswith(("/opt/venv/bin/", "/opt/python/bin/", "/usr/"))
    finally:
        layout.close()


def test_torch_outside_the_interpreter_is_refused_with_the_reason(monkeypatch):
    """torch installed where the sandbox does not look (a user site, a PYTHONPATH folder)
    would not import inside: say so up front."""
    import torch

    monkeypatch.setattr(torch, "__file__", "/srv/elsewhere/torch/__init__.py")
    with pytest.raises(LayoutError, match="outside the interpreter"):
        layout_module.Python.current()


def test_job_folder_seed_skips_links(tmp_path):
    from sandbox.jobdirs import _read_seed

    (tmp_path / "submission.py").write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to("/etc/passwd")
    os.mkfifo(tmp_path / "fifo")
    seed = dict(_read_seed(tmp_path))
    assert seed == {"submission.py": b"x = 1\n"}
    assert stat.S_ISLNK(os.lstat(tmp_path / "link.py").st_mode)  # left alone, not read


def test_no_silent_fallback_when_the_sandbox_is_unavailable(monkeypatch):
    from judge import isolation
    from sandbox import bwrap

    monkeypatch.setattr(bwrap.shutil, "which", lambda name: None)
    with pytest.raises(bwrap.SandboxUnavailable, match="bubblewrap is not installed"):
        bwrap.BwrapLauncher()
    with pytest.raises(SystemExit, match="the sandbox is unavailable"):
        isolation.sandbox_launcher()
    monkeypatch.undo()
    monkeypatch.setattr(bwrap.os, "geteuid", lambda: 1000)
    with pytest.raises(bwrap.SandboxUnavailable, match="must be started as root"):
        bwrap.BwrapLauncher()


def test_dev_mode_needs_asking_for(monkeypatch):
    from judge import isolation

    monkeypatch.delenv("JUDGE_NO_SANDBOX", raising=False)
    assert not isolation.dev_mode_requested(False)
    monkeypatch.setenv("JUDGE_NO_SANDBOX", "1")
    launcher = isolation.make_launcher(False)
    assert launcher.isolation == "none"
    launcher.close()
