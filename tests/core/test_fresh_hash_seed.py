"""``t.fresh(hash_seed=N)``: a runner whose str hashes differ from the shared runners', as
they do between the processes of a real run (length-bucketing's ``other_process``)."""

from __future__ import annotations

from judge.grader import Options, grade
from judge.verdict import Verdict

FIXTURE = """
def str_hash(sol, ctx, text):
    return hash(text)
"""

TESTS = '''
from judge.testing import case

@case(public=True, zh="哈希", en="hashes")
def example_hashes(t):
    here = t.sub.scenario("str_hash", "bucket-3-7")
    with t.fresh(hash_seed=12345) as run:
        other = run.scenario("str_hash", "bucket-3-7")
    with t.fresh() as run:
        same = run.scenario("str_hash", "bucket-3-7")
    with t.fresh(hash_seed=12345) as run:
        again = run.scenario("str_hash", "bucket-3-7")
    with t.fresh(other_hashes=True) as run:
        warm = run.scenario("str_hash", "bucket-3-7")
    t.note(f"{here} {other} {same} {again} {warm}", f"{here} {other} {same} {again} {warm}")
'''


def test_a_fresh_runner_can_have_its_own_hash_seed(make_problem, launcher):
    problem = make_problem(tests=TESTS, fixture=FIXTURE)
    report = grade(problem, "def double(x):\n    return x * 2\n", launcher, Options(seed=1))
    assert report.verdict is Verdict.ACCEPTED, report.to_json("en")
    here, other, same, again, warm = map(int, report.tests[0].message.en.split())
    assert here == same  # every runner without a hash seed of its own: PYTHONHASHSEED=0
    assert other != here  # another process, another str hash
    assert other == again  # the seed decides it
    assert warm not in (here, other)  # other_hashes: PYTHONHASHSEED=1
