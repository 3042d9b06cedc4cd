"""A job with a hash seed of its own (``Job.hash_seed``) gets it as PYTHONHASHSEED, warm
launcher or cold: a forked runner would share the template's, so such a job starts cold."""

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
