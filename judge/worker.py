"""The worker loop: claim a job from the web app over HTTP, judge it, send the result.

A worker is trusted (it holds the tests and the reference) and runs submissions through
its launcher, made once and reused for every job (the sandbox keeps a warm template). It
speaks only HTTP to the web app (see web/README.md, "Worker API"), with the worker token,
whether it was started by ``python -m judge serve`` or on another machine:

    register  ->  claim (long poll)  ->  events + renew (a side thread)  ->  result

While a job is judged a side thread posts its progress events and renews the lease every
third of the lease. If the lease is lost (the worker stalled and the job went to someone
else) the result is dropped: the server would refuse it anyway. On SIGTERM or Ctrl-C the
job in hand is released back to the queue before the worker exits.

Nothing a job holds may stop the worker: every body is made JSON-safe before it is posted
(lone surrogates, NaN), a judging that raises becomes an ``internal_error`` report, a report
that cannot be posted is replaced by a short ``internal_error`` one, the lease thread
survives whatever a batch of events does, and a job claimed more than
:data:`MAX_ATTEMPTS` times (each earlier attempt ended without a result) is ended as
``internal_error`` instead of being judged again.
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from judge.events import CheckedFile, FileChecked, FilesPlanned
from judge.i18n import T
from judge.package import PackageError
from judge.problem_store import Problems
from judge.verdict import Verdict

log = logging.getLogger("judge.worker")
__all__ = ["Claimed", "LeaseKeeper", "Problems", "Worker", "WorkerClient", "main"]

RETRY_MAX_S = 10.0
# where a worker on another machine keeps the problem versions it downloads
DEFAULT_STORE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / \
    "torch-judge" / "bank"
CLAIM_WAIT_MAX_S = 120.0
# A job claimed this many times without a result (released by a crashing judging, or its
# lease lost) is not judged again: it ends as internal_error.
MAX_ATTEMPTS = 5


class Fatal(Exception):
    """Nothing a retry can fix (a wrong token): the worker stops."""


class Unregistered(Exception):
    """The server does not know this worker (its database was reset): register again."""


@dataclass(frozen=True)
class Claimed:
    """A claimed job: judge a submission (``kind="judge"``), or validate a problem version
    like ``python -m judge check`` (``kind="validate"``: no submission, no code)."""

    job_id: int
    lease_token: str
    lease_seconds: float
    submission_id: int | None
    problem: str
    problem_version: str
    code: str
    attempt: int = 1
    kind: str = "judge"
    version_id: int | None = None


class WorkerClient:
    """The worker API, one method per route. Network errors propagate (httpx.HTTPError);
    a lost lease is a False/"rejected" answer, not an exception."""

    def __init__(self, server: str, token: str, http: httpx.Client | None = None) -> None:
        # Reads may wait through a claim's long poll (at most 120 s, see web's worker API).
        timeout = httpx.Timeout(30.0, read=CLAIM_WAIT_MAX_S + 30.0)
        self.http = http or httpx.Client(base_url=server.rstrip("/"), timeout=timeout)
        self.headers = {"Authorization": f"Bearer {token}"}

    def _post(self, path: str, body: dict[str, Any]):
        response = self.http.post(path, json=json_safe(body), headers=self.headers)
        if response.status_code == 401:
            raise Fatal(f"the server refused the worker token: {response.text}")
        if response.status_code >= 500:
            raise httpx.HTTPStatusError(f"server error {response.status_code}",
                                        request=response.request, response=response)
        return response

    def register(self, name: str, gpu: bool, capabilities: dict[str, Any]) -> int:
        r = self._post("/worker/register", {"name": name, "gpu": gpu,
                                            "capabilities": capabilities})
        r.raise_for_status()
        return int(r.json()["worker_id"])

    def claim(self, worker_id: int, gpu: bool, wait_s: float) -> Claimed | None:
        r = self._post("/worker/claim", {"worker_id": worker_id, "gpu": gpu,
                                         "wait_s": min(wait_s, CLAIM_WAIT_MAX_S)})
        if r.status_code == 204:
            return None
        if r.status_code == 404:
            raise Unregistered(r.text)
        r.raise_for_status()
        return Claimed(**r.json())

    def _leased(self, job: Claimed, action: str, **body: Any) -> dict[str, Any] | None:
        r = self._post(f"/worker/jobs/{job.job_id}/{action}",
                       {"lease_token": job.lease_token, **body})
        if r.status_code == 409:
            return None
        r.raise_for_status()
        return r.json()

    def renew(self, job: Claimed) -> bool:
        return self._leased(job, "renew") is not None

    def events(self, job: Claimed, events: list[dict[str, Any]]) -> bool:
        return self._leased(job, "events", events=events) is not None

    def result(self, job: Claimed, report: dict[str, Any]) -> str:
        answer = self._leased(job, "result", report=report)
        return "rejected" if answer is None else str(answer["status"])

    def release(self, job: Claimed) -> bool:
        return self._leased(job, "release") is not None

    def download(self, content_hash: str) -> bytes | None:
        """A stored problem version as a zip; None when the server does not have it."""
        r = self.http.get(f"/worker/packages/{content_hash}.zip", headers=self.headers)
        if r.status_code == 401:
            raise Fatal(f"the server refused the worker token: {r.text}")
        if r.status_code == 404:
            return None
        r.raise_for_status()
        return r.content


class LeaseKeeper(threading.Thread):
    """Posts a job's progress events in order and renews its lease, off the grading thread."""

    def __init__(self, client: WorkerClient, job: Claimed) -> None:
        super().__init__(name=f"lease-{job.job_id}", daemon=True)
        self.client, self.job = client, job
        self.interval = max(0.2, job.lease_seconds / 3)
        self.pending: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.stopping = False
        self.lost = False

    def push(self, event: dict[str, Any]) -> None:
        with self.lock:
            self.pending.append(event)
        self.wake.set()

    def run(self) -> None:
        next_renew = time.monotonic() + self.interval
        while not self.lost:
            self.wake.wait(timeout=max(0.0, next_renew - time.monotonic()))
            self.wake.clear()
            try:
                self._flush()
                if time.monotonic() >= next_renew and not self.lost:
                    self.lost = not self.client.renew(self.job)
                    next_renew = time.monotonic() + self.interval
            except httpx.HTTPError as e:
                log.warning("job %s: cannot reach the server (%s); retrying", self.job.job_id, e)
                next_renew = min(next_renew, time.monotonic() + 1.0)
                if self.stopping:
                    return
                time.sleep(0.5)
            except Exception:  # anything else (a bug, a refused token): keep the lease alive
                log.exception("job %s: posting progress or renewing failed", self.job.job_id)
                next_renew = min(next_renew, time.monotonic() + 1.0)
                if self.stopping:
                    return
                time.sleep(0.5)
            if self.lost:
                log.warning("job %s: lease lost; its result will be dropped", self.job.job_id)
            with self.lock:
                if self.stopping and not self.pending:
                    return

    def _flush(self) -> None:
        with self.lock:
            batch, self.pending = self.pending, []
        if not batch:
            return
        try:
            if not self.client.events(self.job, batch):
                self.lost = True
        except httpx.HTTPError:
            with self.lock:
                self.pending = batch + self.pending
            raise
        # Anything else drops the batch (a retry would fail the same way): progress only.

    def close(self) -> None:
        self.stopping = True
        self.wake.set()
        self.join(timeout=30)


Grade = Callable[..., Any]  # judge.grader.grade's signature


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
        Returns how many jobs were judged."""
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
                self.release_current()
                raise
            finally:
                self.current = None
            judged += 1

    def judge(self, job: Claimed) -> None:
        if job.kind == "validate":
            log.info("validating %s %s (job %s, attempt %s)", job.problem,
                     job.problem_version[:12], job.job_id, job.attempt)
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
        keeper = LeaseKeeper(self.client, job)
        keeper.start()
        unreachable: httpx.HTTPError | None = None
        try:
            work = self.validate if job.kind == "validate" else self.grade
            try:
                report = work(job, keeper.push)
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
        if keeper.lost:
            return
        self.send_result(job, report)

    def _failed(self, job: Claimed, message: T) -> dict[str, Any]:
        """The result of a job that could not be judged (the judge's fault)."""
        if job.kind == "validate":
            return _refused(message.en)
        return _internal_error(job, message).to_json("zh")

    def grade(self, job: Claimed, on_progress: Callable[[dict[str, Any]], None]) -> dict:
        from judge.grader import Options, grade
        from judge.report import Report

        problem = self.problems.get(job.problem, job.problem_version)
        if problem is None:
            return _internal_error(job, T(f"评测机上没有这道题（{job.problem}）",
                                          f"this worker does not have the problem "
                                          f"{job.problem}")).to_json("zh")
        try:
            report: Report = (self._grade or grade)(
                problem, job.code, self.launcher, Options(cuda=self.gpu is not None),
                on_progress=lambda event: on_progress(event.to_json()))
        except Exception as e:  # grade() should never raise; if it does, say so
            log.exception("grading submission %s crashed", job.submission_id)
            return _internal_error(job, T(f"评测机出错：{type(e).__name__}: {e}",
                                          f"the worker failed: {type(e).__name__}: {e}")
                                   ).to_json("zh")
        data = report.to_json("zh")
        data["problem_version"] = problem.content_hash  # in full: the server records it
        return data

    def validate(self, job: Claimed, on_progress: Callable[[dict[str, Any]], None]) -> dict:
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
            files = check_files(problem, cuda=self.gpu is not None)
            on_progress(FilesPlanned(tuple(CheckedFile(label, expected)
                                           for label, expected, code in files
                                           if code is not None)).to_json())
            result = check_problem(problem, self.launcher, workers=1,
                                   cuda=self.gpu is not None,
                                   on_outcome=lambda o: on_progress(
                                       FileChecked(CheckedFile.from_json(o.to_json())).to_json()))
        except Exception as e:  # check_problem should not raise; if it does, say so
            log.exception("validating %s crashed", job.problem)
            return _refused(f"the check failed: {type(e).__name__}: {e}")
        return {"ok": result.ok, "errors": result.errors,
                "files": [o.to_json() for o in result.outcomes],
                "skipped": result.skipped}

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


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_str(text: str) -> str:
    """Lone surrogates replaced by U+FFFD (sandbox.protocol.clean_str, without importing
    torch here: the worker imports it only once its capabilities are being detected)."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as something any JSON encoder accepts and any UTF-8 reader reads: lone
    surrogates become U+FFFD, NaN and infinities None, tuples lists, keys strings, anything
    else its str()."""
    if isinstance(value, str):
        return clean_str(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth > 100:
        return None
    if isinstance(value, dict):
        return {clean_str(str(k)): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth + 1) for v in value]
    try:
        return clean_str(str(value))
    except Exception:
        return f"<{type(value).__name__}>"


def _refused(error: str) -> dict[str, Any]:
    return {"ok": False, "errors": [error], "files": [], "skipped": []}


def _internal_error(job: Claimed, message: T):
    from judge.report import Report

    return Report(Verdict.INTERNAL_ERROR, job.problem, 0, "", job.problem_version[:12],
                  message=message)


# ---------------------------------------------------------------- starting a worker


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


def make_launcher(no_sandbox: bool, slot: int):
    """The sandbox for this worker's slot (its own uid), or with no_sandbox the plain
    launcher (loud)."""
    from judge.isolation import dev_mode_requested, plain_launcher, sandbox_launcher

    if dev_mode_requested(no_sandbox):
        return plain_launcher()
    return sandbox_launcher(slot=slot)


def main(server: str, token: str, *, slot: int = 0, gpu: str = "auto",
         no_sandbox: bool = False, problems_root: Path | None = None,
         name: str | None = None, store: Path | None = None) -> int:
    detected = detect_capabilities()
    import judge.grader  # noqa: F401  (torch, while the child detects: the first job is quick)

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
