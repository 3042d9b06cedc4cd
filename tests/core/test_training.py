"""judge.training: the comparisons that training problems' tests build on."""

from __future__ import annotations

from pathlib import Path

import torch

from judge.training import (
    load_fixture,
    modes_problem,
    module_names,
    order_problem,
    scaled,
    tensors_problem,
)

ROOT = Path(__file__).resolve().parents[2]


def test_tensors_problem_tells_none_from_zeros_and_names_the_parameter():
    names = ["fc.weight", "aux.weight"]
    exp = [torch.ones(2), None]
    assert tensors_problem([torch.ones(2), None], exp, names, suffix=".grad") is None
    zeros = tensors_problem([torch.ones(2), torch.zeros(2)], exp, names, suffix=".grad")
    assert (zeros.index, zeros.name, zeros.kind) == (1, "aux.weight", "none")
    assert zeros.message.en == "aux.weight.grad: expected None, got Tensor(dtype=torch.float32, " \
        "shape=[2])"
    gone = tensors_problem([None, None], exp, names, suffix=".grad")
    assert gone.kind == "missing" and "fc.weight.grad: expected a tensor, got NoneType" in \
        gone.message.en
    off = tensors_problem([torch.tensor([1.0, 3.0]), None], exp, names)
    assert off.kind == "value" and off.message.en.startswith("fc.weight[1]: expected 1")
    assert tensors_problem([torch.ones(2)], exp, names).kind == "length"
    assert tensors_problem("nonsense", exp, names).kind == "length"


def test_scaled_tolerance_grows_with_the_largest_finite_element():
    tol = scaled({"rtol": 1e-6, "atol": 1e-9},
                 [torch.tensor([1000.0, 1.0]), None, torch.tensor([float("inf")])])
    assert tol["rtol"] == 1e-6 and abs(tol["atol"] - (1e-9 + 1e-3)) < 1e-12


def test_order_problem_points_at_the_first_difference():
    exp = ["forward", "backward", "step", "scheduler.step"]
    assert order_problem(list(exp), exp) is None
    msg = order_problem(["forward", "backward", "scheduler.step", "step"], exp)
    assert msg.en.startswith("call #3: expected step, got scheduler.step")
    short = order_problem(["forward", "backward"], exp)
    assert "call #3: expected step, got (the end)" in short.en and short.zh
    assert order_problem("forward", exp).en == "the record of calls is malformed"


def test_modes_problem_names_the_module_and_its_class():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout())
    names = module_names(model)
    assert names == ["model (Sequential)", "model.0 (Linear)", "model.1 (Dropout)"]
    assert modes_problem([True, True, True], [True, True, True], names) is None
    assert modes_problem([True, True, False], [True, True, True], names).en == \
        "model.1 (Dropout).training: expected True, got False"
    assert modes_problem([True], [True, True, True], names) is not None


def test_load_fixture_imports_the_packages_own_fixture():
    fixture = load_fixture(ROOT / "problems" / "train-step" / "tests.py")
    model = fixture.build_model({"sizes": [3, 4, 2], "seed": 1})
    assert next(n for n, _ in model.named_parameters()) == "fc1.weight"
