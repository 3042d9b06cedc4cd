"""What a runner does around a timed call (STAGE, then RUN) that the speed checks rely on:
the call's state is let go once its result is sent, not inside the next timed call."""

from __future__ import annotations

from tests.sandbox.helpers import job_folder, session

FIXTURE = """
FREED = []


class State:
    def __init__(self, n):
        self.n = n

    def __del__(self):
        FREED.append(self.n)


def prepare(sol, ctx, n):
    return State(n)


def timed(sol, ctx, state):
    return state.n


def freed(sol, ctx):
    return list(FREED)
"""


def test_a_timed_calls_state_goes_once_its_result_is_sent(any_launcher, tmp_path):
    # Before, the runner's loop kept the last RUN's state until the next RUN rebound its
    # names: freeing it (a million Python ints in distributed-bucketing) was timed as
    # part of the next call, of whichever side came next.
    with session(any_launcher, job_folder(tmp_path, "def f():\n    return 0\n"),
                 fixture=FIXTURE) as s:
        result, _ = s.timed_run("fixture", "timed", [1], {}, 10.0, prepare="prepare")
        assert result.value == 1
        assert s.call("fixture", "freed", [], {}).value == [1]
        s.timed_run("fixture", "timed", [2], {}, 10.0, prepare="prepare")
        assert s.call("fixture", "freed", [], {}).value == [1, 2]
