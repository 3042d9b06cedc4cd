"""Fewer round trips per case: a call begun on one runner while the other computes
(``RunnerSession.begin``, ``t.ref.begin``), several calls begun on one runner sent
together and answered back to back, and the arguments of a ``return_args`` call
answered "unchanged" instead of sent back when the call left them as they came."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
import torch

from judge.session import (
    IN_FLIGHT_BYTES,
    MAX_IN_FLIGHT,
    Budget,
    CallResult,
    RunnerLost,
    SubmissionError,
)
from judge.testing import Ctx, ReferenceFailed
from sandbox.channel import CHANNEL_BUFFER_BYTES
from tests.sandbox.helpers import job_folder, session

CODE = """
import time, torch

def f(batch, scale=1):
    return [x["ids"] * scale if isinstance(x, dict) else x * scale for x in batch]

def mutate(batch, scale=1):
    batch[0]["ids"].add_(1)      # modifies a tensor it was given
    return len(batch)

def reorder(batch):
    batch[0]["b"] = batch[0].pop("a")  # another key, the same values
    return 0

def slow(seconds):
    time.sleep(seconds)
    return seconds

def boom():
    raise ValueError("no")

def die():
    import os
    os._exit(3)

def sndbufs():
    import os, socket
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            s = socket.socket(fileno=os.dup(int(fd)))
        except OSError:
            continue
        with s:
            if s.family == socket.AF_UNIX and s.type == socket.SOCK_STREAM:
                found.append(s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF))
    return found
"""
NAMES = ("f", "mutate", "reorder", "slow", "boom", "die", "sndbufs")


def batch() -> list[dict]:
    return [{"ids": torch.arange(5), "label": 1}, {"ids": torch.tensor([7]), "label": 0}]


def test_arguments_left_as_they_came_are_answered_unchanged_and_given_back(
        warm_launcher, tmp_path):
    sent = batch()
    with session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as s:
        frames = []
        recv = s.process.channel.recv

        def spy(deadline=None):
            msg = recv(deadline)
            frames.append(msg.body)
            return msg

        s.process.channel.recv = spy
        res = s.call("sub", "f", [sent], {"scale": 2}, return_args=True)
        assert frames[-1].get("args_unchanged") is True and "args" not in frames[-1]
        assert res.args == [sent] and res.args[0] is sent and res.kwargs == {"scale": 2}
        assert [x.tolist() for x in res.value] == [[0, 2, 4, 6, 8], [14]]

        changed = s.call("sub", "mutate", [batch()], {}, return_args=True)
        assert "args_unchanged" not in frames[-1]
        assert changed.args[0][0]["ids"].tolist() == [1, 2, 3, 4, 5]  # as the call left it
        moved = s.call("sub", "reorder", [[{"a": 1}]], {}, return_args=True)
        assert moved.args == [[{"b": 1}]]
        plain = s.call("sub", "f", [sent], {})
        assert plain.args == [] and "args_unchanged" not in frames[-1]


def test_a_call_begun_runs_while_the_other_runner_computes(warm_launcher, tmp_path):
    with session(warm_launcher, job_folder(tmp_path, CODE, "ref"), names=NAMES) as ref, \
            session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as sub:
        for s in (ref, sub):
            s.budget = Budget(10.0)
        import time

        started = time.monotonic()
        finish = ref.begin("sub", "slow", [0.6], {})
        assert sub.call("sub", "slow", [0.6], {}).value == 0.6
        assert finish().value == 0.6
        assert time.monotonic() - started < 1.1  # together, not 1.2 s one after the other
        assert finish().value == 0.6  # the same answer again


def test_a_call_begun_and_never_read_is_taken_before_the_next_one(warm_launcher, tmp_path):
    with session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as s:
        s.budget = Budget(10.0)
        first = s.begin("sub", "slow", [0.05], {})
        late = s.begin("sub", "boom", [], {})
        assert s.call("sub", "f", [[torch.ones(1)]], {}).value[0].tolist() == [1.0]
        assert first().value == 0.05  # settled by the plain call, kept for this look
        with pytest.raises(SubmissionError, match="no"):
            late()


def test_calls_begun_together_go_out_at_once_and_are_answered_back_to_back(
        warm_launcher, tmp_path):
    with session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as s:
        s.budget = Budget(20.0)
        s.ready()
        started = time.monotonic()
        first = s.begin("sub", "slow", [1.0], {})
        failing = s.begin("sub", "boom", [], {})
        sent = batch()
        unchanged = s.begin("sub", "f", [sent], {"scale": 2}, return_args=True)
        last = s.begin("sub", "slow", [1.0], {})
        assert time.monotonic() - started < 0.5  # none of them waited for an answer
        # Read out of order: the answers before it are kept for their own look.
        assert last().value == 1.0
        assert time.monotonic() - started < 3.0  # 2 s of calls, back to back
        assert first().value == 1.0
        with pytest.raises(SubmissionError, match="no"):
            failing()
        res = unchanged()
        assert res.args[0] is sent and [x.tolist() for x in res.value] == [[0, 2, 4, 6, 8],
                                                                          [14]]
        assert s.pending == [] and s.in_flight_bytes == 0


def test_calls_begun_stay_within_what_the_socket_holds(warm_launcher, tmp_path):
    """Begun calls beyond the caps wait for the oldest answer first. Without the byte cap,
    two 4 MiB calls in a row deadlock: the grader blocks sending the second while the
    runner blocks sending the first's answer, which nobody reads."""
    with session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as s:
        s.budget = Budget(30.0)
        many = []
        for i in range(MAX_IN_FLIGHT + 8):
            many.append(s.begin("sub", "f", [[torch.full((3,), i)]], {}))
            assert len(s.pending) <= MAX_IN_FLIGHT
        assert [m().value[0].tolist() for m in many] == [[i] * 3 for i in
                                                          range(MAX_IN_FLIGHT + 8)]
        big = torch.arange(2**20, dtype=torch.float32)  # 4 MiB a frame, and as much back
        assert big.numel() * 4 > IN_FLIGHT_BYTES
        started = time.monotonic()
        large = [s.begin("sub", "f", [[big]], {"scale": k}) for k in (1, 2, 3)]
        assert len(s.pending) == 1
        for k, pending in zip((1, 2, 3), large, strict=True):
            assert torch.equal(pending().value[0], big * k)
        assert time.monotonic() - started < 10.0
        assert s.alive


def test_a_smaller_socket_buffer_holds_fewer_calls_begun(warm_launcher, tmp_path):
    with session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as s:
        s.budget = Budget(30.0)
        s.ready()
        sock = s.process.channel.sock
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
        cap = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) // 4
        assert cap < IN_FLIGHT_BYTES
        many = []
        for i in range(10):
            many.append(s.begin("sub", "f", [[torch.full((1500,), i)]], {}))  # 12 KB
            assert len(s.pending) == 1  # over the smaller cap: the one before was taken
        assert [int(m().value[0][0]) for m in many] == list(range(10))


def test_a_runner_that_dies_on_a_later_call_still_answers_the_earlier_ones(
        warm_launcher, tmp_path):
    with session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as s:
        s.budget = Budget(10.0)
        first = s.begin("sub", "f", [[torch.ones(2)]], {"scale": 5})
        dying = s.begin("sub", "die", [], {})
        after = s.begin("sub", "f", [[torch.ones(2)]], {})
        assert first().value[0].tolist() == [5.0, 5.0]
        with pytest.raises(RunnerLost):
            dying()
        with pytest.raises(RunnerLost):
            after()
        assert not s.alive


class Source:
    def __init__(self, sessions: dict) -> None:
        self.sessions = sessions

    def __call__(self, role: str, fresh: bool = False, **_):
        return self.sessions[role]


def test_t_ref_begin_gives_the_value_later_and_a_failing_reference_says_so(
        warm_launcher, tmp_path):
    with session(warm_launcher, job_folder(tmp_path, CODE, "ref"), names=NAMES) as ref, \
            session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as sub:
        t = Ctx(seed=1, public=True, budget=Budget(10.0),
                sessions=Source({"ref": ref, "sub": sub}), workdirs={})
        pending = t.ref.begin("f", [torch.ones(2)], scale=3)
        got = t.sub.f([torch.ones(2)], scale=3)
        assert pending.value[0].tolist() == got[0].tolist() == [3.0, 3.0]
        failing = t.ref.begin("boom")
        with pytest.raises(ReferenceFailed):
            _ = failing.value
        with pytest.raises(ReferenceFailed):  # asked again: the same failure
            _ = failing.result


def test_t_sub_begin_gives_the_arguments_back_and_the_submissions_own_error(
        warm_launcher, tmp_path):
    with session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as sub:
        t = Ctx(seed=1, public=True, budget=Budget(10.0),
                sessions=Source({"sub": sub}), workdirs={})
        sent = batch()
        changed = t.sub.begin("mutate", sent, return_args=True)
        failing = t.sub.begin("boom")
        assert changed.value == 2
        assert changed.result.args[0][0]["ids"].tolist() == [1, 2, 3, 4, 5]
        assert sent[0]["ids"].tolist() == [0, 1, 2, 3, 4]  # the grader's own copy
        with pytest.raises(SubmissionError, match="no"):  # the submission's, not the judge's
            _ = failing.value


SCENARIOS = """
def nap(sol, ctx, seconds):
    return sol.slow(seconds)

def broken(sol, ctx):
    return sol.boom()
"""


def test_t_begin_scenario_runs_both_runners_at_once_and_each_side_fails_as_its_own(
        warm_launcher, tmp_path):
    """grad-accumulation and length-bucketing begin the reference's scenario and the
    submission's, then read both: one scenario's time instead of two."""
    with session(warm_launcher, job_folder(tmp_path, CODE, "ref"), names=NAMES,
                 fixture=SCENARIOS) as ref, \
            session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES,
                    fixture=SCENARIOS) as sub:
        t = Ctx(seed=1, public=False, budget=Budget(10.0),
                sessions=Source({"ref": ref, "sub": sub}), workdirs={})
        started = time.monotonic()
        exp = t.ref.begin_scenario("nap", 0.6)
        got = t.sub.begin_scenario("nap", seconds=0.6)
        assert time.monotonic() - started < 0.3  # neither waited for an answer
        assert got.value == exp.value == 0.6
        assert time.monotonic() - started < 1.1  # together, not 1.2 s one after the other
        with pytest.raises(SubmissionError, match="no"):  # the learner's error
            _ = t.sub.begin_scenario("broken").value
        with pytest.raises(ReferenceFailed):  # the problem's fault, not the learner's
            _ = t.ref.begin_scenario("broken").value


class Replay:
    """A session with no ``begin`` (a practice pack's replay or recording)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def call(self, target, fn, args, kwargs, *, return_args=False):
        self.calls.append((target, fn, args, kwargs))
        return CallResult(value=[fn, *args])


def test_t_begin_scenario_without_a_live_runner_calls_at_the_first_look():
    replay = Replay()
    t = Ctx(seed=1, public=False, budget=Budget(10.0), sessions=Source({"sub": replay}),
            workdirs={})
    pending = t.sub.begin_scenario("nap", 2, seconds=1)
    assert replay.calls == []
    assert pending.value == ["nap", 2] and pending.value == ["nap", 2]
    assert replay.calls == [("fixture", "nap", [2], {"seconds": 1})]  # once, as a scenario


def test_both_ends_of_a_runners_channel_can_send_a_large_answer_in_one_write(
        warm_launcher, tmp_path):
    """A padding-collate answer of 351 KB went in two or three writes with Linux's default
    buffer, each waiting for the other side to wake up (sandbox.channel.channel_pair)."""
    try:
        wmem_max = int(Path("/proc/sys/net/core/wmem_max").read_text())
    except OSError:
        pytest.skip("no /proc/sys/net/core/wmem_max to say what the kernel allows")
    expected = 2 * min(CHANNEL_BUFFER_BYTES, wmem_max)  # the kernel doubles what it is asked
    with session(warm_launcher, job_folder(tmp_path, CODE), names=NAMES) as s:
        s.budget = Budget(10.0)
        grader_end = s.process.channel.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        assert grader_end == expected
        assert expected in s.call("sub", "sndbufs", [], {}).value  # the runner's end
