"""The worker's side of the worker API: one method per route, and the thread that keeps a
job's lease while it is judged.

:class:`WorkerClient` speaks HTTP to the web app with the worker token (see web/README.md,
"Worker API"); :class:`LeaseKeeper` posts a job's progress events in order and renews its
lease every third of the lease, off the grading thread, and notices when the lease is lost
(the worker stalled and the job went to someone else). Every body is made JSON-safe before
it is posted (:func:`json_safe`: lone surrogates, NaN). The job loop that uses them is
:mod:`judge.worker`.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

log = logging.getLogger("judge.worker")  # one logger for the worker, whichever module logs
__all__ = ["CLAIM_WAIT_MAX_S", "Claimed", "Fatal", "LeaseKeeper", "Unregistered",
           "WorkerClient", "clean_str", "json_safe"]

CLAIM_WAIT_MAX_S = 120.0


class Fatal(Exception):
    """Nothing a retry can fix (a wrong token): the worker stops."""


class Unregistered(Exception):
    """The server does not know this worker (its database was reset): register again."""


@dataclass(frozen=True)
class Claimed:
    """A claimed job: judge a submission (``kind="judge"``), or validate a problem version
    like ``python -m judge check`` (``kind="validate"``: no submission, no code), or run code
    on the public cases only (``kind="run"``: "Run examples", no submission)."""

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
    # a validation split across workers: this job is shard ``shard`` of ``shards``, which
    # take the files one at a time from the server (take_file)
    shard: int = 0
    shards: int = 1
    run_id: int | None = None  # kind="run": "Run examples", public cases only


class WorkerClient:
    """The worker API, one method per route. Network errors propagate (httpx.HTTPError);
    a lost lease is a False/"rejected" answer, not an exception."""

    def __init__(self, server: str, token: str, http: httpx.Client | None = None) -> None:
        # Reads may wait through a claim's long poll (at most 120 s, see web's worker API).
        timeout = httpx.Timeout(30.0, read=CLAIM_WAIT_MAX_S + 30.0)
        self.http = http or httpx.Client(base_url=server.rstrip("/"), timeout=timeout)
        self.headers = {"Authorization": f"Bearer {token}"}
        # jobs the server asked to give way (a rank job while other work waits): the
        # answers to renew and events say so
        self.yield_asked: set[int] = set()

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
        job = Claimed(**r.json())
        self.yield_asked.discard(job.job_id)  # a job given back and claimed again
        return job

    def _leased(self, job: Claimed, action: str, **body: Any) -> dict[str, Any] | None:
        r = self._post(f"/worker/jobs/{job.job_id}/{action}",
                       {"lease_token": job.lease_token, **body})
        if r.status_code == 409:
            return None
        r.raise_for_status()
        answer = r.json()
        if isinstance(answer, dict) and answer.get("yield"):
            self.yield_asked.add(job.job_id)
        else:  # the latest answer counts: the other work may have been taken meanwhile
            self.yield_asked.discard(job.job_id)
        return answer

    def renew(self, job: Claimed) -> bool:
        return self._leased(job, "renew") is not None

    def events(self, job: Claimed, events: list[dict[str, Any]]) -> bool:
        return self._leased(job, "events", events=events) is not None

    def result(self, job: Claimed, report: dict[str, Any]) -> str:
        answer = self._leased(job, "result", report=report)
        return "rejected" if answer is None else str(answer["status"])

    def take(self, job: Claimed, label: str) -> bool:
        """Whether this shard of a validation judges ``label`` (False: another shard took it,
        or the lease was lost)."""
        answer = self._leased(job, "take", label=label)
        return bool(answer and answer.get("take"))

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

    def __init__(self, client: WorkerClient, job: Claimed, poll_s: float | None = None) -> None:
        super().__init__(name=f"lease-{job.job_id}", daemon=True)
        self.client, self.job = client, job
        # renewed at a third of the lease, or every ``poll_s`` (a rank job: each renewal's
        # answer says whether it should give way)
        self.interval = max(0.2, min(job.lease_seconds / 3, poll_s or math.inf))
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
