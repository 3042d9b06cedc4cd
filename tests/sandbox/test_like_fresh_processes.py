"""Runners differ as fresh processes on a real machine do, where a problem's tests need it:
a job with a hash seed of its own (``Job.hash_seed``) gets it as PYTHONHASHSEED, warm
launcher or cold (a forked runner shares its template's, so such a job starts cold, but for
OTHER_HASH_SEED, which has a second template),
and warm runners do not all get the same pid (resumable-training's pid-named temporary
files)."""

from __future__ import annotations

from judge.session import RunnerSession
from sandbox.launch import Job, Limits
from tests.sandbox.helpers import job_folder

CODE = """
import os, sys
def f(text):
    return os.environ.get("PYTHONHASHSEED"), sys.flags.hash_randomization, hash(text)
"""


def hashes(launcher, folder, hash_seed):
    s = RunnerSession(launcher, Job(folder, Limits(), hash_seed=hash_seed),
                      {"submission": folder / "submission.py", "names": ["f"], "threads": 1,
                       "device": "cpu"})
    s.start()
    try:
        s.ready()
        return s.call("sub", "f", ["rank-1"], {}).value
    finally:
        s.close()


def test_a_job_gets_its_own_hash_seed(any_launcher, tmp_path):
    folder = job_folder(tmp_path, CODE)
    default = hashes(any_launcher, folder, None)
    own = hashes(any_launcher, folder, 4242)
    assert tuple(default[:2]) == ("0", 0)
    assert tuple(own[:2]) == ("4242", 1)
    assert own[2] != default[2]
    assert hashes(any_launcher, folder, 4242) == own


def test_the_other_hash_seed_is_forked_warm_from_a_second_template(warm_launcher, tmp_path):
    """OTHER_HASH_SEED (t.fresh(other_hashes=True)) needs no cold start: the launcher starts
    a second template with it when first asked, and forks its runners from there."""
    from sandbox.launch import OTHER_HASH_SEED

    folder = job_folder(tmp_path, CODE)
    default = hashes(warm_launcher, folder, None)
    other = hashes(warm_launcher, folder, OTHER_HASH_SEED)
    assert tuple(other[:2]) == (str(OTHER_HASH_SEED), 1) and other[2] != default[2]
    second = warm_launcher.other_template
    assert second is not None and second.alive and second is not warm_launcher.template
    assert hashes(warm_launcher, folder, OTHER_HASH_SEED) == other
    assert warm_launcher.other_template is second  # one second template, reused
    assert hashes(warm_launcher, folder, None) == default  # the first one is unchanged


PID = """
import os
def f():
    return os.getpid()
"""


def test_warm_runners_do_not_all_get_the_same_pid(warm_launcher, tmp_path):
    folder = job_folder(tmp_path, PID)
    pids = []
    for _ in range(8):
        s = RunnerSession(warm_launcher, Job(folder, Limits()),
                          {"submission": folder / "submission.py", "names": ["f"],
                           "threads": 1, "device": "cpu"})
        s.start()
        try:
            s.ready()
            pids.append(s.call("sub", "f", [], {}).value)
        finally:
            s.close()
    # 2 to 65, at random: 8 runners show fewer than 3 pids with a chance below 1e-8
    assert all(2 <= pid <= 65 for pid in pids), pids
    assert len(set(pids)) >= 3, pids
