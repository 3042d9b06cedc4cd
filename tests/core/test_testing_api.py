"""The test API as docs/writing-problems.md §10 documents it: expect_close's tolerances by
dtype (torch.testing's), its dtype and shape checks, and the Text alias."""

from __future__ import annotations

import pytest
import torch

from judge.i18n import T, Text
from judge.session import Budget
from judge.testing import TOLERANCES, CaseFailed, Ctx, tolerances


def ctx() -> Ctx:
    return Ctx(seed=1, public=True, budget=Budget(1.0), sessions=lambda *a, **k: None,
               workdirs={})


def test_expect_close_defaults_suit_float32_near_zero():
    t = ctx()
    expected = torch.tensor([0.0, 1e-7, 100.0])
    t.expect_close(expected + torch.tensor([4e-6, -4e-6, 1e-4]), expected, "x")  # rounding
    with pytest.raises(CaseFailed, match=r"x\[0\]: expected 0, got 9.9999997e-05 .*"
                                         r"allowed rtol=1.3e-06, atol=1e-05"):
        t.expect_close(expected + torch.tensor([1e-4, 0.0, 0.0]), expected, "x")


def test_expect_close_is_strict_in_float64_and_checks_dtype_and_shape():
    t = ctx()
    exp64 = torch.tensor([1.0, 2.0], dtype=torch.float64)
    with pytest.raises(CaseFailed, match="allowed rtol=1e-07, atol=1e-07"):
        t.expect_close(exp64 + 1e-5, exp64, "y")
    t.expect_close(exp64 + 1e-5, exp64, "y", rtol=1e-4)  # an explicit tolerance wins
    with pytest.raises(CaseFailed, match=r"expected dtype torch\.float64, got torch\.float32"):
        t.expect_close(exp64.float(), exp64, "y")
    with pytest.raises(CaseFailed, match=r"expected shape \[2\], got \[1, 2\]"):
        t.expect_close(exp64[None], exp64, "y")
    t.expect_close(0.1 + 0.2, 0.3, "a float")  # a Python float: float64's tolerances


def test_the_documented_tolerance_table():
    assert tolerances(torch.zeros(1)) == TOLERANCES[torch.float32] == (1.3e-6, 1e-5)
    assert tolerances(1.0) == (1e-7, 1e-7)
    assert tolerances(torch.zeros(1, dtype=torch.int64)) == (0.0, 0.0)


def test_text_is_t_under_a_name_that_leaves_t_free():
    assert Text is T and Text("中", "en")("en") == "en"
