"""Tests run in the trusted grader, in source order: public cases first, then hidden ones.

Each case gets ``t`` (a judge.testing.Ctx):

- ``t.rng`` / ``t.random``: seeded from the submission's secret seed and the case's name,
  so hidden inputs are fresh for every submission and reproducible from the seed;
- ``t.sub.NAME(...)`` / ``t.ref.NAME(...)``: call the submission's or the reference's NAME
  in its runner process (arguments and results cross as data: tensors, numbers, lists,
  dicts, strings); ``t.sub.call(NAME, ..., return_args=True)`` also returns the arguments
  as they were after the call; ``t.sub.scenario(NAME, ...)`` runs a fixture.py scenario;
- ``t.expect_equal / expect_close / expect_raises / expect / fail``: end the case as
  wrong_answer with a message in both languages that says what was expected, what came
  back and where; ``t.note(zh, en)`` adds a line to a passing public case;
- ``t.explain_errors(fn)``: a hint (``fn(error) -> T | None``) added to the message when the
  submission raises; ``t.skip(zh, en)``: this machine cannot run the case (its torch lacks
  a feature), which is then neither a failure nor counted.

An exception the submission raises and the case does not expect makes it runtime_error
(memory errors: memory_limit_exceeded); a timeout, time_limit_exceeded. A bug in this file
is internal_error, so check types (expect_equal does) before indexing into results.
"""

import torch

from judge.i18n import Text  # bilingual text; T is left free for a sequence length
from judge.testing import case, workload
from judge.throughput import Workload


def random_input(t, rows, cols):
    x = torch.randn(rows, cols, generator=t.rng, dtype=torch.float64)
    mask = torch.rand(rows, cols, generator=t.rng) < 0.6
    return x, mask


# Public cases: shown in full to learners and run by `python practice/judge.py test`.
# The ones named example_* are the examples (`test --run`).
@case(public=True, zh="基本用法", en="basic use")
def example_basic(t):
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[True, True, False], [False, True, True]])
    t.expect_close(t.sub.masked_mean(x, mask), t.ref.masked_mean(x, mask), "masked_mean(x, mask)")


# Hidden cases: learners see the name, the one-line category and the verdict only.
@case(zh="随机输入", en="random inputs")
def random_rows(t):
    for _ in range(5):
        x, mask = random_input(t, t.random.randint(1, 8), t.random.randint(1, 30))
        t.expect_close(t.sub.masked_mean(x, mask), t.ref.masked_mean(x, mask),
                       "masked_mean(x, mask)", rtol=1e-9, atol=1e-12)


@case(zh="整行都被遮住", en="a row with nothing masked in")
def empty_row(t):
    x, mask = random_input(t, 4, 10)
    mask[t.random.randrange(4)] = False
    t.expect_close(t.sub.masked_mean(x, mask), t.ref.masked_mean(x, mask),
                   "masked_mean(x, mask)", rtol=1e-9, atol=1e-12,
                   hint=Text("空行应当得到 0.0，而不是 NaN", "an empty row gives 0.0, not NaN"))


@case(zh="形状不一致时抛出 ValueError", en="ValueError when the shapes differ")
def shape_mismatch(t):
    x, _ = random_input(t, 3, 5)
    _, mask = random_input(t, 3, 6)
    t.expect_raises("ValueError", lambda: t.sub.masked_mean(x, mask), "masked_mean(x, mask)")


@case(zh="在模块输出上调用（场景）", en="called on a module's output (scenario)")
def through_fixture(t):
    x, mask = random_input(t, 3, 7)
    got = t.sub.scenario("masked_mean_of_module", x, mask)
    exp = t.ref.scenario("masked_mean_of_module", x, mask)
    t.expect_close(got, exp, "masked_mean(module(x), mask)", rtol=1e-9, atol=1e-12)


# A throughput workload, named by [[throughput]] in problem.toml. `make(rng)` returns fresh
# (args, kwargs) for every timed call; `check(got, expected)` verifies every timed result
# against the reference's result on the same inputs.
@workload
def large_batch(device):
    def make(rng):
        x = torch.randn(512, 4096, generator=rng)
        mask = torch.rand(512, 4096, generator=rng) < 0.5
        return (x, mask), {}

    return Workload(fn="masked_mean", make=make, check=lambda got, exp: torch.allclose(
        got, exp, rtol=1e-4, atol=1e-5))
