"""The host's side of the warm template (``forkserver.py``): start it, ask it for jobs.

:class:`TemplateProcess` starts the fork server inside bubblewrap, as the slot's uid, and
talks to it over a SOCK_SEQPACKET control socket (one JSON request per job, with three
file descriptors attached). :func:`handshake` then waits on the job's own status socket:
the template sends the pidfds of the job's runner (the host puts it in its cgroups, without
pid races) and of its init (killing it kills the job), the host says "go", the runner says
"confined". :class:`WarmRunner` is the RunnerProcess for such a job: it is killed through
the init's pidfd and reaped by waiting for the template's report (the runner's wait status
and rusage, sent once nothing of the job is left); should the template be gone, the init's
pidfd becoming readable says the job is over.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import socket
import subprocess
import threading
import time
from typing import Any

from sandbox import linux
from sandbox.cgroup import Group, GroupedRunner
from sandbox.channel import Channel
from sandbox.launch import Job, Usage

log = logging.getLogger("sandbox.template")
READY_TIMEOUT_S = 120.0  # importing torch on a loaded machine
HANDSHAKE_TIMEOUT_S = 30.0


class SandboxError(RuntimeError):
    """The sandbox could not be set up: the judge's fault, never the submission's."""


class TemplateProcess:
    """One warm template (a bwrap process running ``python -m sandbox.forkserver``)."""

    def __init__(self, argv: list[str], pass_fds: list[int], control: socket.socket,
                 job_bpf: bytes) -> None:
        self.control = control
        self.lock = threading.Lock()
        self.info: dict[str, Any] = {}
        # cwd="/": bubblewrap keeps the caller's working directory when it exists inside
        # and sets PWD to it, so the worker's folder (a host path) would reach every job's
        # environment.
        self.proc = subprocess.Popen(argv, pass_fds=pass_fds, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, cwd="/")
        assert self.proc.stdout is not None
        self._logger = threading.Thread(target=self._log, args=(self.proc.stdout,), daemon=True,
                                        name=f"template-{self.proc.pid}")
        self._logger.start()
        self.control.sendall(json.dumps({"job_filter": job_bpf.hex()}).encode())
        self._ready = threading.Event()
        self._error: str | None = None
        threading.Thread(target=self._wait_ready, daemon=True).start()

    def _log(self, stream) -> None:
        for line in stream:
            log.warning("template %d: %s", self.proc.pid, line.decode(errors="replace").rstrip())

    def _wait_ready(self) -> None:
        try:
            self.control.settimeout(READY_TIMEOUT_S)
            data = self.control.recv(65536)
            self.control.settimeout(None)
            self.info = json.loads(data) if data else {}
            if not self.info.get("ready"):
                self._error = "the template exited while starting"
            elif self.info.get("threads", 1) != 1:
                log.warning("the template runs %s threads after importing torch: forked jobs "
                            "may deadlock", self.info.get("threads"))
        except (OSError, ValueError) as e:
            self._error = f"the template did not start: {e}"
        self._ready.set()

    def wait_ready(self) -> None:
        self._ready.wait(READY_TIMEOUT_S + 5)
        if self._error or not self.info.get("ready"):
            raise SandboxError(self._error or "the template did not start")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, body: dict[str, Any], fds: list[int]) -> None:
        self.wait_ready()
        with self.lock:
            try:
                socket.send_fds(self.control, [json.dumps(body).encode()], fds)
            except OSError as e:
                raise SandboxError(f"the template is gone: {e}") from None

    def close(self) -> None:
        try:
            self.control.close()  # the template exits when its control socket closes
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._logger.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def handshake(status: socket.socket, group: Group | None) -> int:
    """Receive the job's pidfds from the template, put the runner in ``group``, tell it to
    go on and wait until it says it is confined. Returns the init's pidfd (killing the
    init kills the job). Raises SandboxError."""
    status.settimeout(HANDSHAKE_TIMEOUT_S)
    init_pidfd = -1
    try:
        data, fds, _, _ = socket.recv_fds(status, 65536, 2)
        if data != b"P" or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            raise SandboxError(_describe(data))
        init_pidfd, runner_pidfd = fds
        try:
            if group is not None:
                group.add(linux.pidfd_host_pid(runner_pidfd))
        finally:
            os.close(runner_pidfd)
        status.send(b"G")
        data = status.recv(65536)
        if data != b"S":
            raise SandboxError(_describe(data))
        status.settimeout(None)
        return init_pidfd
    except (OSError, ProcessLookupError, SandboxError) as e:
        if init_pidfd >= 0:
            _kill(init_pidfd)
            os.close(init_pidfd)
        if isinstance(e, SandboxError):
            raise
        raise SandboxError(f"the job's sandbox did not start: {e}") from None


def _describe(data: bytes) -> str:
    if not data:
        return "the job's sandbox ended while starting"
    try:
        message = json.loads(data)
    except ValueError:
        return f"the job's sandbox sent {data[:80]!r}"
    if isinstance(message, dict) and "error" in message:
        return f"the job's sandbox failed: {message['error']}"
    return f"the job's sandbox ended while starting: {message}"


def _kill(pidfd: int) -> None:
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass  # already gone


class WarmRunner(GroupedRunner):
    """A job forked from the template. ``pid`` is its init's pid on the host."""

    REPORT_GRACE_S = 2.0

    def __init__(self, init_pidfd: int, status: socket.socket, channel: Channel, job: Job,
                 group: Group | None, on_release) -> None:
        super().__init__(linux.pidfd_host_pid(init_pidfd), channel, job, group, on_release)
        self.pidfd = init_pidfd
        self.status = status

    def _signal_tree(self, sig: int) -> None:
        # SIGKILL to the init of the job's pid namespace kills every process in it.
        try:
            signal.pidfd_send_signal(self.pidfd, sig)
        except OSError:
            pass

    def reap(self) -> tuple[int, Usage]:
        """Wait for the template's report (sent once the runner and the init are both
        reaped). Should the template be gone, the end of the init is enough to know the
        job is over, but its status and usage are then unknown."""
        report: dict[str, Any] | None = None
        init_gone_at: float | None = None
        while report is None:
            timeout = None
            if init_gone_at is not None:
                timeout = max(0.0, init_gone_at + self.REPORT_GRACE_S - time.monotonic())
            readable, _, _ = select.select([self.status.fileno(), self.pidfd], [], [], timeout)
            if self.status.fileno() in readable:
                try:
                    data = self.status.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    break
                report = _report(data)
            elif self.pidfd in readable and init_gone_at is None:
                init_gone_at = time.monotonic()
            elif not readable:
                break
        if report is None:
            return signal.SIGKILL, Usage()
        return int(report["status"]), Usage(float(report.get("cpu_s", 0.0)),
                                            float(report.get("max_rss_kb", 0)) / 1024)

    def _close(self) -> None:
        os.close(self.pidfd)
        self.status.close()


def _report(data: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(data)
    except ValueError:
        return None
    if isinstance(message, dict) and isinstance(message.get("status"), int):
        return message
    return None
