"""Correct solutions that a hidden case once rejected, judged again on the seed that showed
it: the hidden cases must never reject a correct solution, and a false rejection found by
chance (``judge check`` draws a fresh seed each run) stays found."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.grader import Options, grade
from judge.package import load_problem
from judge.verdict import Verdict

ROOT = Path(__file__).resolve().parents[2] / "problems"

# (problem, accepted fixture, seed, case, what went wrong)
ONCE_REJECTED = [
    ("token-accumulation", "upcast_logits_float32", 665321823229814113, "optimizers",
     "Adam's default eps turned float32 rounding of a gradient near 1e-8 into a parameter "
     "7x past the tolerance (fixture.py: ADAM_EPS)"),
]


@pytest.mark.parametrize(("slug", "fixture", "seed", "case", "why"), ONCE_REJECTED,
                         ids=[f"{s}/{f}" for s, f, *_ in ONCE_REJECTED])
def test_a_correct_solution_once_rejected_is_accepted(quick_launcher, tmp_path, slug, fixture,
                                                      seed, case, why):
    code = (ROOT / slug / "submissions" / "accepted" / f"{fixture}.py").read_text()
    options = Options(seed=seed, throughput=False, cases=(case,), jobs_root=tmp_path)
    report = grade(load_problem(ROOT / slug), code, quick_launcher, options)
    assert report.verdict is Verdict.ACCEPTED, (why, report.to_json("en")["tests"])
