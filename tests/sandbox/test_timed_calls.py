"""What a runner does around a timed call (STAGE, then RUN) that the speed checks rely on:
the call's state is let go once its result is sent, not inside the next timed call, and
the memory a call frees stays in the runner for the next one (sandbox.launch:
KEEP_FREED_MEMORY)."""

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

MEMORY = """
def anon_kb():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("RssAnon")).split()[1])


def churn(n):
    # Small objects (str) and one large buffer, made and dropped within the call.
    words = [str(i) * 4 for i in range(n)]
    block = bytearray(24 << 20)
    block[::4096] = b"x" * len(block[::4096])
    del words, block
    return anon_kb()
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


def test_a_runner_keeps_the_memory_a_call_freed(any_launcher, tmp_path):
    # ~60 MB of small objects and a 24 MB buffer, freed before the call returns: the
    # runner keeps the pages for its next calls instead of giving them back to the kernel
    # (pymalloc's emptied arenas, glibc's trimmed heap), so a timed call does not fault
    # fresh pages in where the previous call left off.
    with session(any_launcher, job_folder(tmp_path, MEMORY),
                 names=("anon_kb", "churn")) as s:
        before = s.call("sub", "anon_kb", [], {}).value
        after = s.call("sub", "churn", [1_000_000], {}).value
        assert after - before > 40_000, (before, after)
        again = s.call("sub", "churn", [1_000_000], {}).value
        assert again - after < 10_000, (after, again)  # reused, not grown
