"""The worker loop: claim a job from the web app over HTTP, judge it, send the result.

A worker is trusted (it holds the tests and the reference) and runs submissions through
its launcher, made once and reused for every job (the sandbox keeps a warm template). It
speaks only HTTP to the web app (see web/README.md, "Worker API"), with the worker token,
whether it was started by ``python -m judge serve`` or on another machine:

    register  ->  claim (long poll)  ->  events + renew (a side thread)  ->  result

The HTTP client and the side thread (:class:`~judge.worker_client.LeaseKeeper`: posts the
progress events, renews the lease every third of the lease) are
:mod:`judge.worker_client`, re-exported here. If the lease is lost (the worker stalled and
the job went to someone else) the result is dropped: the server would refuse it anyway.
On SIGTERM or Ctrl-C the job in hand is released back to the queue before the worker
exits.

Nothing a job holds may stop the worker: every body is made JSON-safe before it is posted
(lone surrogates, NaN), a judging that raises becomes an ``internal_error`` report, a report
that cannot be posted is replaced by a short ``internal_error`` one, the lease thread
survives whatever a batch of events does, and a job claimed more than
:data:`MAX_ATTEMPTS` times (each earlier attempt ended without a result) is ended as
``internal_error`` instead of being judged again.
"""

from __future__ import annotations

import inspect
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from judge.events import CheckedFile, FileChecked, FilesPlanned
from judge.i18n import T
from judge.package import PackageError
from judge.problem_store import Problems
from judge.sessions import HeadStart
from judge.verdict import Verdict
from judge.worker_client import Claimed, Fatal, LeaseKeeper, Unregistered, WorkerClient

log = logging.getLogger("judge.worker")
# Claimed, Fatal, LeaseKeeper and WorkerClient (judge.worker_client) are part of Worker's API.
__all__ = ["MAX_ATTEMPTS", "Claimed", "Fatal", "LeaseKeeper", "Problems", "Worker",
           "WorkerClient"]

RETRY_MAX_S = 10.0
# where a worker on another machine keeps the problem versions it downloads
DEFAULT_STORE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / \
    "torch-judge" / "bank"
# A job claimed this many times without a result (released by a crashing judging, or its
# lease lost) is not judged again: it ends as internal_error.
MAX_ATTEMPTS = 5
# A rank job renews its lease this often: each answer says whether live work waits for it.
RANK_POLL_S = 0.5


Grade = Callable[..., Any]  # judge.grader.grade's signature


class GaveWay(BaseException):
    """A rank job stopped to let other work go first. A BaseException: the grader turns
    every Exception into a verdict, and this must reach the worker's loop instead."""


class Worker:
    def __init__(self, client: WorkerClient, launcher, problems: Problems, *,
                 name: str, gpu: int | None = None, capabilities: dict[str, Any] | None = None,
                 wait_s: float = 20.0, grade: Grade | None = None) -> None:
        self.client, self.launcher, self.problems = client, launcher, problems
        self.name, self.gpu, self.wait_s = name, gpu, wait_s
        self.capabilities = capabilities or {}
        self._grade = grade
        self.worker_id: int | None = None
        self.current: Claimed | None = None
        # The next judging's runners, started as this one ends (judge.sessions.HeadStart).
        self.head_start = HeadStart(launcher)

    def register(self, give_up_after: float | None = None) -> None:
        """Register, retrying while the server is not up yet."""
        started, delay = time.monotonic(), 0.2
        while True:
            try:
                self.worker_id = self.client.register(self.name, self.gpu is not None,
                                                      self.capabilities)
                log.info("worker %s registered as #%s", self.name, self.worker_id)
                return
            except httpx.HTTPError as e:
                if give_up_after is not None and time.monotonic() - started > give_up_after:
                    raise
                log.info("waiting for the server (%s)", e)
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    def run(self, *, until_idle: bool = False) -> int:
        """Judge jobs until interrupted (or, with until_idle, until a claim finds none).
        Returns how many jobs were judged. The runners started ahead for a next judging
        are stopped when it returns."""
        try:
            return self._run(until_idle)
        finally:
            self.head_start.close()

    def _run(self, until_idle: bool) -> int:
        if self.worker_id is None:
            self.register()
        judged, delay = 0, 0.5
        while True:
            try:
                job = self.client.claim(self.worker_id or 0, self.gpu is not None,
                                        0.0 if until_idle else self.wait_s)
                delay = 0.5
            except httpx.HTTPError as e:
                log.warning("claim failed (%s); retrying in %.0f s", e, delay)
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            except Unregistered:
                log.warning("the server no longer knows worker #%s; registering again",
                            self.worker_id)
                self.register()
                continue
            if job is None:
                if until_idle:
                    return judged
                continue
            self.current = job
            try:
                self.judge(job)
            except Exception as e:
                if isinstance(e, Fatal):
                    self.release_current()
                    raise
                # judge() turns every failure into a report; should one still get here, the
                # job goes back (MAX_ATTEMPTS bounds how often) and the worker goes on.
                log.exception("job %s failed outside its judging", job.job_id)
                self.release_current()
                time.sleep(delay)
                continue
            except BaseException:  # SIGTERM/Ctrl-C (KeyboardInterrupt): give it back
                log.info("stopping while job %s runs; giving it back", job.job_id)
                self.release_current()
                raise
            finally:
                self.current = None
            judged += 1

    def judge(self, job: Claimed) -> None:
        if job.kind == "validate":
            log.info("validating %s %s (job %s, attempt %s)", job.problem,
                     job.problem_version[:12], job.job_id, job.attempt)
        elif job.kind == "rank":
            log.info("ranking submission %s (job %s, attempt %s, %s)", job.submission_id,
                     job.job_id, job.attempt, job.problem)
        else:
            log.info("judging submission %s (job %s, attempt %s, %s)", job.submission_id,
                     job.job_id, job.attempt, job.problem)
        if job.attempt > MAX_ATTEMPTS:
            log.error("job %s: attempt %s, giving up on it", job.job_id, job.attempt)
            self.send_result(job, self._failed(job, T(
                f"评测了 {job.attempt - 1} 次都没有得到结果，已放弃",
                f"judging was attempted {job.attempt - 1} times without a result; "
                f"given up")))
            return
        # A rank job asks the server often whether live work waits for it to give way.
        keeper = LeaseKeeper(self.client, job,
                             poll_s=RANK_POLL_S if job.kind == "rank" else None)
        keeper.start()
        unreachable: httpx.HTTPError | None = None
        post = EarlyResult(self, job, keeper)
        try:
            work = self.validate if job.kind == "validate" else self.grade
            try:
                report = work(job, self._progress(job, keeper), post)
            except GaveWay:
                log.info("job %s: other work is waiting; giving the rank job back", job.job_id)
                keeper.close()
                self._release(job)
                return
            except httpx.HTTPError as e:  # the package download met a server restarting
                unreachable = e
            except Exception as e:  # a bug (or a download that failed): say so, go on
                log.exception("job %s crashed", job.job_id)
                report = self._failed(job, T(f"评测机出错：{type(e).__name__}: {e}",
                                             f"the worker failed: {type(e).__name__}: {e}"))
        finally:
            keeper.close()
        if unreachable is not None:  # not the submission's fault: no verdict, judge it again
            log.warning("job %s: cannot reach the server (%s); giving the job back",
                        job.job_id, unreachable)
            self._release(job)
            return
        if keeper.lost or post.sent:
            return
        self.send_result(job, report)

    def _progress(self, job: Claimed, keeper: LeaseKeeper) -> Callable[[dict[str, Any]], None]:
        """Where a job's progress goes: to the server. A rank job stops at its next event
        once the server has asked it to give way (a live submission, a validation or a
        rejudge is waiting): it is released and judged again later."""
        if job.kind != "rank":
            return keeper.push
        asked: set[int] = getattr(self.client, "yield_asked", set())
        last: list[dict[str, Any] | None] = [None]

        def push(event: dict[str, Any]) -> None:
            # The measurement's heartbeat (the same phase again) is not posted: it only
            # gives this check a chance between timed pairs.
            if event != last[0] or event.get("event") != "phase":
                keeper.push(event)
            last[0] = event
            if job.job_id in asked:
                raise GaveWay(job.job_id)

        return push

    def _failed(self, job: Claimed, message: T) -> dict[str, Any]:
        """The result of a job that could not be judged (the judge's fault)."""
        if job.kind == "validate":
            return _refused(message.en)
        return _internal_error(job, message).to_json("zh")

    def grade(self, job: Claimed, on_progress: Callable[[dict[str, Any]], None],
              post: Callable[[dict[str, Any]], None] | None = None) -> dict:
        """The job's report, as posted. ``post`` gets it as soon as the verdict is known,
        while the runners are still being stopped (when the grade function takes
        ``on_verdict``, as judge.grader.grade does)."""
        from judge.grader import grade
        from judge.report import Report

        problem = self.problems.get(job.problem, job.problem_version)
        if problem is None:
            return _internal_error(job, T(f"评测机上没有这道题（{job.problem}）",
                                          f"this worker does not have the problem "
                                          f"{job.problem}")).to_json("zh")
        grader = self._grade or grade
        early: dict[str, Any] = {}
        takes = inspect.signature(grader).parameters
        if post is not None and "on_verdict" in takes:
            early["on_verdict"] = lambda done: post(_posted(done, problem))
        if "head_start" in takes:
            early["head_start"] = self.head_start
        try:
            report: Report = grader(
                problem, job.code, self.launcher, grade_options(job, self.gpu is not None),
                on_progress=lambda event: on_progress(event.to_json()), **early)
        except Exception as e:  # grade() should never raise; if it does, say so
            log.exception("grading submission %s crashed", job.submission_id)
            return _internal_error(job, T(f"评测机出错：{type(e).__name__}: {e}",
                                          f"the worker failed: {type(e).__name__}: {e}")
                                   ).to_json("zh")
        return _posted(report, problem)

    def validate(self, job: Claimed, on_progress: Callable[[dict[str, Any]], None],
                 post: Callable[[dict[str, Any]], None] | None = None) -> dict:
        """``python -m judge check`` on the job's version, in this worker's launcher:
        every file's verdict as progress, then the result the server stores."""
        from judge.check import check_files, check_problem

        try:
            problem = self.problems.exact(job.problem_version)
        except (PackageError, OSError) as e:
            return _refused(f"the worker cannot load this version: {e}")
        if problem is None:
            return _refused(f"the worker cannot get version {job.problem_version[:12]} "
                            f"from the server")
        try:
            # every file this machine can judge: a shard of several does not know yet which
            # of them it will take (the server folds the shards' plans into one)
            files = check_files(problem, cuda=self.gpu is not None)
            on_progress(FilesPlanned(tuple(CheckedFile(label, expected)
                                           for label, expected, code in files
                                           if code is not None)).to_json())
            result = check_problem(problem, self.launcher, workers=1,
                                   cuda=self.gpu is not None,
                                   take=self._taker(job) if job.shards > 1 else None,
                                   on_outcome=lambda o: on_progress(
                                       FileChecked(CheckedFile.from_json(o.to_json())).to_json()))
        except Exception as e:  # check_problem should not raise; if it does, say so
            log.exception("validating %s crashed", job.problem)
            return _refused(f"the check failed: {type(e).__name__}: {e}")
        return result.to_json()

    def _taker(self, job: Claimed) -> Callable[[str, str], bool]:
        """check_problem's ``take`` for one shard of a validation: the server says whether
        this shard judges a file (network errors are retried for a lease's length)."""
        def take(label: str, expected: str) -> bool:
            deadline, delay = time.monotonic() + job.lease_seconds, 0.5
            while True:
                try:
                    return self.client.take(job, label)
                except httpx.HTTPError as e:
                    if time.monotonic() > deadline:
                        raise
                    log.warning("job %s: cannot ask for %s (%s); retrying", job.job_id, label, e)
                    time.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
        return take

    def send_result(self, job: Claimed, report: dict[str, Any]) -> None:
        """Post the result, retrying network errors for a lease's length. A report that
        cannot be posted at all (a bug, a value the server refuses) is replaced by a short
        internal_error one; if even that fails, the job is released."""
        deadline, delay = time.monotonic() + job.lease_seconds, 0.5
        replaced = False
        while True:
            try:
                status = self.client.result(job, report)
                if job.kind == "validate":
                    log.info("version %s of %s: %s (%s)", job.problem_version[:12],
                             job.problem, "valid" if report.get("ok") else "invalid", status)
                else:
                    log.info("submission %s: %s (%s)", job.submission_id,
                             report.get("verdict"), status)
                return
            except httpx.HTTPError as e:
                if time.monotonic() > deadline:
                    log.error("giving up on sending the result of job %s: %s", job.job_id, e)
                    return
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
            except Fatal:
                raise
            except Exception as e:
                log.exception("the result of job %s cannot be sent", job.job_id)
                if replaced:
                    self._release(job)
                    return
                replaced = True
                report = self._failed(job, T(
                    f"评测结果无法发送：{type(e).__name__}",
                    f"the judge could not send this result: {type(e).__name__}"))

    def release_current(self) -> None:
        if self.current is not None:
            self._release(self.current)

    def _release(self, job: Claimed) -> None:
        try:
            self.client.release(job)
            log.info("released job %s back to the queue", job.job_id)
        except Exception as e:  # HTTP, Fatal, anything: the lease expires by itself
            log.warning("could not release job %s (%s); its lease will expire", job.job_id, e)


def _posted(report, problem) -> dict[str, Any]:
    """A report as the server stores it."""
    data = report.to_json("zh")
    data["problem_version"] = problem.content_hash  # in full: the server records it
    return data


class EarlyResult:
    """Posts a job's result the moment its verdict is known (the grader is still stopping
    its runners and removing their folders): the job's progress first, then the result,
    once. The worker's loop then posts nothing more for the job."""

    def __init__(self, worker: Worker, job: Claimed, keeper: LeaseKeeper) -> None:
        self.worker, self.job, self.keeper = worker, job, keeper
        self.sent = False

    def __call__(self, report: dict[str, Any]) -> None:
        if self.sent:
            return
        self.sent = True
        self.keeper.close()  # every progress event before the result
        if not self.keeper.lost:
            self.worker.send_result(self.job, report)


def grade_options(job: Claimed, cuda: bool):
    """How a job is graded: a "Run examples" job (``kind="run"``) on the public cases only
    and with no speed check; a submission on every case, speed checks included. A rank job
    (the low-priority follow-up of an accepted submission) judges it again in full, its
    speed checks measured precisely: the server keeps their ratios."""
    from judge.grader import Options

    if job.kind == "run":
        return Options(cuda=cuda, public_only=True, throughput=False)
    return Options(cuda=cuda, speed="ranking" if job.kind == "rank" else "verdict")


def _refused(error: str) -> dict[str, Any]:
    return {"ok": False, "errors": [error], "files": [], "skipped": []}


def _internal_error(job: Claimed, message: T):
    from judge.report import Report

    return Report(Verdict.INTERNAL_ERROR, job.problem, 0, "", job.problem_version[:12],
                  message=message)
