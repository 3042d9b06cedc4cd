"""Judging with a package's own code confined: the worker's side of a grader box.

For a package that did not ship with the judge (``judge.trust``), :func:`grade_in_box` runs
the whole grading — the import of ``tests.py``, its cases, input generation, comparisons
and the clock — in a grader box (``sandbox/box.py``: bubblewrap, a uid of its own, no
network, no token, only this package's files), and this process acts as its launch broker:

* it makes the judging's folder, a size-limited tmpfs of its own (``/run/torch-judge/
  boxes/<pid>-…``): ``problem/`` a copy of the package (read-only, at ``/problem`` inside),
  ``jobs/sub`` and ``jobs/ref`` the two job folders (at ``/jobs``, owned by the box's uid and
  the slot's group; the box cannot rename or replace them, so the launcher's mounts on them
  never follow anything the box made). The folder is a shared mount, so the job folders'
  own tmpfs (``jobdirs``), mounted when a runner starts, appear in the box too;
* it starts, kills, pauses and waits for runners when the box asks (:class:`Broker`), with
  its own limits and device for them, on those two folders only, and hands each runner's
  channel to the box as a descriptor: timed calls never pass through here;
* it takes judge.throughput's machine-wide lock for the box's speed checks;
* it passes the box's progress events on and takes its report, after checking both; what
  the report says of the judging itself (problem, version, seed, isolation, device, torch)
  is this process's. A box that crashes, lies in its messages, or outlives its limits makes
  the report internal_error — the package's fault, never the submission's;
* at the end, whatever happened, it kills the box and every runner, releases the job
  folders and unmounts the judging's folder.

A hostile package still decides the verdicts of its own problem's submissions (its tests
are the judge of them); what it cannot reach is anything else: the worker's token and
memory, other problems, the network, files outside its judging.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.broker import BoxFailed, Broker
from judge.i18n import T
from judge.package import Problem
from judge.report import Report
from judge.verdict import Verdict
from sandbox import linux
from sandbox.launch import Launcher, Limits, MiB

log = logging.getLogger("judge.graderbox")

BOX_ROOT = Path("/run/torch-judge/boxes")
ROLES = ("sub", "ref")
SEED_ROOM_MB = 160  # what the box may write into its job folders before a runner starts
MAX_EXPECTED_BYTES = 16 * MiB


def box_limits(problem: Problem) -> Limits:
    """The box's own limits: room for the grader's work (inputs, expected values, the
    reference's results) and a wall clock over the whole judging."""
    from judge.package import limits_for

    wall = 2 * limits_for(problem).lifetime_s + 120
    return Limits(lifetime_s=wall, cpu_s=wall, memory_mb=4096, output_bytes=1 * MiB,
                  keep_output_bytes=16 * 1024, nproc=128, nofile=1024, tmp_mb=64, shm_mb=16)


def in_box(problem: Problem, launcher: Launcher, device: str, job: dict[str, Any],
           emit=lambda event: None) -> dict[str, Any]:
    """Run ``job`` in a grader box for ``problem``; its last message. Raises BoxFailed."""
    from judge.package import limits_for, speed_checks_s

    with judging_folder(launcher, problem) as (root, folders):
        # The speed checks' own bound (each measured twice at most, in ranking mode's
        # longer budget), and a minute.
        lock_s = 2 * speed_checks_s(problem) + 60 if problem.meta.throughput else 0.0
        broker = Broker(launcher, folders, limits_for(problem), device, emit, lock_s)
        try:
            return broker.run(root, job, box_limits(problem))
        finally:
            broker.close()


def grade_in_box(problem: Problem, code: str, launcher: Launcher, options: Any,
                 report: Report, emit) -> None:
    """Judge ``code`` in a grader box, into ``report`` (whose seed and device are used);
    every failure of the box ends as internal_error in ``report``."""
    job = {"mode": "grade", "code": code, "seed": report.seed, "device": report.device,
           "options": {"public_only": options.public_only,
                       "examples_only": options.examples_only, "cases": list(options.cases),
                       "throughput": options.throughput, "cuda": options.cuda,
                       "speed": options.speed}}
    try:
        last = in_box(problem, launcher, report.device, job, emit)
        if last.get("op") != "report":
            raise BoxFailed(f"it ended with {str(last.get('op'))[:40]!r}, not a report")
        adopt(report, last.get("report"))
    except BoxFailed as e:
        log.error("grader box of %s (%s) failed: %s\n%s", problem.slug,
                  problem.content_hash[:12], e.why, e.output[-4000:])
        report.verdict = Verdict.INTERNAL_ERROR
        report.tests, report.throughput = [], []
        report.message = T("评测系统内部错误：这道题的测试代码出错了，不是你的代码的问题。",
                           "internal error: this problem's tests failed; this is not your "
                           "code's fault.")
        tail = f"\n{e.output[-2000:]}" if e.output else ""
        report.detail = T(f"测试代码的隔离进程：{e.why}{tail}",
                          f"the problem's grader box: {e.why}{tail}")


def adopt(report: Report, data: Any) -> None:
    """Take the verdicts of the box's report; what it says of the judging is ours."""
    try:
        got = Report.from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise BoxFailed(f"its report does not read as one: {type(e).__name__}: {e}") from None
    report.verdict, report.tests, report.throughput = got.verdict, got.tests, got.throughput
    report.message, report.detail = got.message, got.detail


def record_in_box(problem: Problem, launcher: Launcher, public_tests: str) -> bytes:
    """The practice pack's part of an untrusted package, made in a grader box: the box runs
    ``public_tests`` (tests.py cut to its public cases) to make sure no hidden case
    survived, and records the reference's answers to the public cases (judge.expected).
    Returns expected.bin; RuntimeError when the box refuses or fails."""
    from judge.expected import decode_recording

    try:
        last = in_box(problem, launcher, "cpu", {"mode": "record",
                                                 "public_tests": public_tests})
    except BoxFailed as e:
        raise RuntimeError(f"the grader box failed: {e.why}\n{e.output[-2000:]}") from None
    if last.get("op") != "packed":
        raise RuntimeError(str(last.get("error") or "the grader box recorded nothing")[:2000])
    try:
        data = base64.b64decode(str(last.get("expected")), validate=True)
        if len(data) > MAX_EXPECTED_BYTES:
            raise ValueError(f"{len(data)} bytes")
        decode_recording(data)
    except ValueError as e:
        raise RuntimeError(f"the grader box's recording does not read as one: {e}") from None
    return data


# ---------------------------------------------------------------- the judging's folder


@contextlib.contextmanager
def judging_folder(launcher: Launcher, problem: Problem
                   ) -> Iterator[tuple[Path, dict[str, Path]]]:
    """A tmpfs with the package's copy and the two job folders; released and unmounted on
    the way out, whatever happened."""
    from sandbox.box import box_uid
    from sandbox.layout import unmount_under

    sweep()
    uid = box_uid(launcher)  # type: ignore[arg-type]
    root = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=BOX_ROOT))
    folders = {role: root / "jobs" / role for role in ROLES}
    try:
        size = _size(problem.dir) // MiB + SEED_ROOM_MB + 8
        linux.mount("tj-box", str(root), "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                    f"size={size}m,nr_inodes=8192,mode=0755")
        # A peer group of its own, shared: the job folders' tmpfs mounted below it later
        # (jobdirs.ensure) reach the box's copy of it, a slave.
        linux.mount(None, str(root), None, linux.MS_PRIVATE)
        linux.mount(None, str(root), None, linux.MS_SHARED)
        _copy_package(problem.dir, root / "problem")
        (root / "jobs").mkdir(mode=0o755)
        for folder in folders.values():
            folder.mkdir(mode=0o770)
            os.chown(folder, uid, launcher.gid)  # type: ignore[attr-defined]
            os.chmod(folder, 0o770)
        yield root, folders
    finally:
        for folder in folders.values():
            try:
                launcher.release(folder)
            except Exception:
                log.exception("the launcher could not release %s", folder)
        unmount_under(root)


def sweep() -> None:
    """Unmount the judging folders of workers that are no longer running."""
    from sandbox.layout import unmount_under

    for p in (BOX_ROOT.parent, BOX_ROOT):
        p.mkdir(exist_ok=True)
        os.chmod(p, 0o755)
    for entry in BOX_ROOT.iterdir():
        owner = entry.name.split("-", 1)[0]
        if owner.isdigit() and not linux.pid_alive(int(owner)):
            unmount_under(entry)


def _size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file()
               and not p.is_symlink())


def _copy_package(source: Path, target: Path) -> None:
    """Regular files and folders only (links are not followed), read-only for everyone
    but root; ``__pycache__`` left out."""
    for top, dirs, files in os.walk(source, followlinks=False):
        rel = Path(top).relative_to(source)
        dirs[:] = [d for d in dirs if d != "__pycache__"
                   and not os.path.islink(os.path.join(top, d))]
        (target / rel).mkdir(mode=0o755)
        for name in files:
            src = Path(top) / name
            if not stat.S_ISREG(src.lstat().st_mode):
                continue
            fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f:
                (target / rel / name).write_bytes(f.read())
            os.chmod(target / rel / name, 0o444)
    for top, dirs, _ in os.walk(target):
        for d in dirs:
            os.chmod(os.path.join(top, d), 0o555)
    os.chmod(target, 0o555)
