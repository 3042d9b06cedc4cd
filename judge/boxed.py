"""Inside a grader box (``sandbox/box.py``): a package's tests, run confined.

``python -m judge.boxed --fd N --limits JSON`` is what the box runs, as the slot's box uid,
with nothing of the worker's but this link: it lowers its rlimits, reads its one job from
the link, loads the package from ``/problem`` and judges with :func:`judge.grader._grade`,
exactly as the worker would in its own process, except that runners are started by the
worker (:class:`BrokerLauncher`): each one's protocol channel arrives here as a descriptor,
so calls and their clock go straight between this process and the runner. Progress events
and the report go back as JSON (``judge/graderbox.py`` checks them).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import socket
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.boxwire import Link
from sandbox.channel import Channel
from sandbox.launch import Exit, ExitReason, Job

PROBLEM = Path("/problem")  # the package, read-only
JOBS = Path("/jobs")  # the judging's job folders: sub, ref


class BrokerError(RuntimeError):
    """The worker refused or failed a request (the judge's fault: internal_error)."""


def _ask(link: Link, op: str, **body: Any) -> tuple[Any, list[int]]:
    reply, fds = link.request({"op": op, **body})
    if "error" in reply:
        for fd in fds:
            socket.socket(fileno=fd).close()
        raise BrokerError(str(reply["error"]))
    return reply.get("value"), fds


class RemoteRunner:
    """A runner the worker started for this box: the RunnerProcess API of judge.session.
    The channel is our own descriptor of the runner's socket; the rest is asked for."""

    def __init__(self, link: Link, rid: int, channel: Channel, job: Job, inside: str) -> None:
        self.link, self.id, self.channel, self.job = link, rid, channel, job
        self.inside = Path(inside)
        weakref.finalize(self, channel.close)

    def _ask(self, op: str, **body: Any) -> Any:
        return _ask(self.link, op, id=self.id, **body)[0]

    def path_inside(self, host_path: Path) -> str:
        return str(self.inside / Path(host_path).relative_to(self.job.dir))

    def kill(self, reason: ExitReason = ExitReason.KILLED) -> None:
        self._ask("kill", reason=str(reason))

    def pause(self, paused: bool, away_from: int | None = None) -> bool:
        return bool(self._ask("pause", paused=bool(paused), away_from=away_from))

    def cpu_time_ns(self) -> int | None:
        got = self._ask("cpu")
        return None if got is None else int(got)

    @property
    def alive(self) -> bool:
        return bool(self._ask("alive"))

    def settle_output(self) -> int:
        return int(self._ask("settle"))

    def output_since(self, mark: int) -> str:
        return str(self._ask("since", mark=int(mark)))

    def wait(self, timeout: float | None = None) -> Exit | None:
        while True:
            got = self._ask("wait", timeout=30.0 if timeout is None else float(timeout))
            if got is not None:
                return Exit(ExitReason(got["reason"]), got["returncode"], got["signal"],
                            got["cpu_s"], got["max_rss_mb"])
            if timeout is not None:
                return None

    def oom_kills(self) -> int:
        return int(self._ask("oom"))

    def memory_bytes(self) -> int | None:
        got = self._ask("memory")
        return None if got is None else int(got)


class BrokerLauncher:
    """The Launcher a box's grader uses: the worker starts each runner, on one of the
    folders it made (``/jobs/sub`` or ``/jobs/ref``), with its own limits and device."""

    isolation = "bwrap"

    def __init__(self, link: Link) -> None:
        self.link = link

    def start(self, job: Job) -> RemoteRunner:
        if job.dir.parent != JOBS:
            raise BrokerError(f"{job.dir} is not a job folder of this judging")
        value, fds = _ask(self.link, "start", role=job.dir.name, hash_seed=job.hash_seed)
        if len(fds) != 1:
            for fd in fds:
                socket.socket(fileno=fd).close()
            raise BrokerError("the worker sent no channel for the runner")
        channel = Channel(socket.socket(fileno=fds[0]), max_blob=int(value["max_blob"]))
        return RemoteRunner(self.link, int(value["id"]), channel, job, str(value["inside"]))

    def release(self, folder: Path) -> None:
        pass  # the worker releases the job folders when the box is done

    def close(self) -> None:
        pass


@contextlib.contextmanager
def measuring_alone(link: Link) -> Iterator[None]:
    """judge.throughput's machine-wide lock, taken by the worker for this box (the lock
    file is the worker's: nothing of it is shown in here)."""
    _ask(link, "lock")
    try:
        yield
    finally:
        _ask(link, "unlock")


def grade(link: Link, job: dict[str, Any]) -> dict[str, Any]:
    """Judge ``job`` (what graderbox.grade_in_box sends) and return the report's JSON."""
    import torch

    from judge import grader, throughput
    from judge.events import Done
    from judge.package import load_problem
    from judge.report import Report
    from judge.verdict import Verdict

    # The one hook into the speed checks: their lock is the worker's.
    throughput.measuring_alone = lambda path=None: measuring_alone(link)  # type: ignore
    problem = load_problem(PROBLEM, named_by_slug=False)
    o = job["options"]
    options = grader.Options(seed=job["seed"], public_only=bool(o["public_only"]),
                             examples_only=bool(o["examples_only"]),
                             cases=tuple(o["cases"]), throughput=bool(o["throughput"]),
                             cuda=bool(o["cuda"]), speed=str(o.get("speed", "verdict")))
    report = Report(Verdict.ACCEPTED, problem.slug, job["seed"], "bwrap",
                    torch=torch.__version__, device=job["device"])

    def emit(event: Any) -> None:
        if not isinstance(event, Done):  # the worker says when it is done
            link.send({"op": "event", "event": event.to_json()})

    launcher: Any = BrokerLauncher(link)  # RemoteRunner speaks RunnerProcess, by duck
    # the report goes back once the box is done (its runners stopped): nothing to say
    # before that
    grader._grade(problem, job["code"], launcher, options, report, JOBS, emit,
                  known=lambda: None)
    grader.finish(report)
    return report.to_json()


def record(link: Link, job: dict[str, Any]) -> bytes:
    """The practice pack's part: run the cut tests.py (no hidden case may survive), then
    record the reference's answers to the public cases."""
    from judge.pack import assert_only_public, record_public
    from judge.package import load_problem

    assert_only_public(str(job["public_tests"]), PROBLEM / "tests.py")
    launcher: Any = BrokerLauncher(link)
    return record_public(load_problem(PROBLEM, named_by_slug=False), launcher, JOBS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="a grader box's inside")
    parser.add_argument("--fd", type=int, required=True, help="the link to the worker")
    parser.add_argument("--limits", required=True, help="rlimits, see sandbox.confine")
    args = parser.parse_args(argv)
    from sandbox.confine import apply_rlimits, prefer_as_oom_victim

    prefer_as_oom_victim()
    apply_rlimits(json.loads(args.limits))
    link = Link(socket.socket(fileno=args.fd))
    job, _ = link.recv()
    if job.get("mode") == "grade":
        link.send({"op": "report", "report": grade(link, job)})
    elif job.get("mode") == "record":
        try:
            expected = record(link, job)
        except Exception as e:  # the package's own failure, said to the pack's builder
            link.send({"op": "failed", "error": f"{type(e).__name__}: {e}"})
        else:
            link.send({"op": "packed", "expected": base64.b64encode(expected).decode()})
    else:
        raise SystemExit(f"unknown job {job.get('mode')!r}")


if __name__ == "__main__":
    main()
