"""Comparators: None when right, a message that says what, where and how otherwise."""

from __future__ import annotations

import torch

from judge import compare
from sandbox.protocol import Unencodable


def test_tensor_equal_points_at_the_first_difference():
    exp = torch.tensor([[True, True], [True, False]])
    got = exp.clone()
    got[1, 0] = False
    msg = compare.tensor_equal(got, exp, what="attention_mask")
    assert msg.en == "attention_mask[1, 0]: expected True, got False (1 differ)"
    assert "期望 True，得到 False" in msg.zh
    assert compare.tensor_equal(exp.clone(), exp, what="m") is None


def test_dtype_shape_and_type_are_checked_before_values():
    exp = torch.zeros(2, 3, dtype=torch.bool)
    assert "expected dtype torch.bool, got torch.int64" in compare.tensor_equal(
        exp.long(), exp, what="m").en
    assert "expected shape [2, 3], got [2, 4]" in compare.tensor_equal(
        torch.zeros(2, 4, dtype=torch.bool), exp, what="m").en
    assert "expected a torch.Tensor, got list" in compare.tensor_equal([1], exp, what="m").en
    assert "numpy.ndarray" in compare.tensor_equal(Unencodable("numpy.ndarray", "array([])"),
                                                   exp, what="m").en


def test_nan_equals_nan_but_not_a_number():
    exp = torch.tensor([1.0, float("nan")])
    assert compare.tensor_equal(exp.clone(), exp, what="x") is None
    assert compare.tensor_equal(torch.tensor([1.0, 2.0]), exp, what="x") is not None


def test_tensor_close_reports_tolerance_and_worst_error():
    exp = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert compare.tensor_close(exp + 1e-9, exp, what="w", rtol=1e-6) is None
    msg = compare.tensor_close(exp * torch.tensor([1, 1.1, 1], dtype=torch.float64), exp,
                               what="w", rtol=1e-6)
    assert msg.en.startswith("w[1]: expected 2, got 2.2")
    assert "rtol=1e-06" in msg.en


def test_float_close_rejects_non_numbers():
    assert compare.float_close(0.5 + 1e-12, 0.5, what="ratio") is None
    assert "expected a float, got str" in compare.float_close("0.5", 0.5, what="ratio").en
    assert "expected a float, got bool" in compare.float_close(True, 1.0, what="ratio").en
    assert "expected 0.5, got 0.6" in compare.float_close(0.6, 0.5, what="ratio").en


def test_keys_equal_names_missing_and_extra_keys():
    msg = compare.keys_equal({"a": 1, "c": 2}, {"a": 0, "b": 0}, what="out")
    assert "missing keys ['b']" in msg.en and "unexpected keys ['c']" in msg.en
    assert "expected a dict, got tuple" in compare.keys_equal((1,), {"a": 0}, what="out").en


def test_value_equal_walks_the_structure():
    exp = {"batches": [[0, 1], [2]], "len": 2, "t": torch.tensor([1])}
    assert compare.value_equal({"batches": [[0, 1], [2]], "len": 2, "t": torch.tensor([1])},
                               exp, what="r") is None
    msg = compare.value_equal({"batches": [[0, 1], [3]], "len": 2, "t": torch.tensor([1])},
                              exp, what="r")
    assert msg.en == "r['batches'][1][0]: expected 2, got 3"
    assert "expected length 2, got 1" in compare.value_equal([1], [1, 2], what="r").en
    assert "expected a list, got tuple" in compare.value_equal((1, 2), [1, 2], what="r").en
    assert compare.value_equal(True, 1, what="r") is not None  # bool is not an int answer
    assert compare.value_equal(2.0, 2, what="r") is None


def test_arguments_answered_unchanged_are_equal_to_themselves_nan_included():
    """A runner that says a call left its arguments unchanged gets back the very objects
    the case sent: they are equal without a walk, a float NaN in them too (as NaN equals
    NaN in a tensor); an equal copy with a NaN float is not, as before."""
    batch = [{"input_ids": torch.tensor([1.0, float("nan")]), "weight": float("nan")}]
    assert compare.value_equal(batch, batch, what="batch") is None
    copy = [{"input_ids": torch.tensor([1.0, float("nan")]), "weight": float("nan")}]
    assert "batch[0]['weight']" in compare.value_equal(copy, batch, what="batch").en
    copy[0]["weight"] = 1.0
    copy[0]["input_ids"][0] = 2.0
    assert "batch[0]['input_ids'][0]" in compare.value_equal(copy, batch, what="batch").en


def test_tensors_the_judge_cannot_carry_say_which_dtype_or_layout():
    """Not "expected a torch.Tensor, got torch.Tensor": what about it is not supported."""
    expected = torch.zeros(3, dtype=torch.long)
    cases = {
        "dtype torch.uint16": ("dtype torch.uint16", "dtype 为 torch.uint16"),
        "layout torch.sparse_coo": ("layout torch.sparse_coo", "layout 为 torch.sparse_coo"),
        "nested": ("a nested tensor", "嵌套张量"),
        "quantized, dtype torch.qint8": ("quantized", "量化张量"),
        "device meta": ("meta device", "meta 设备"),
        "cannot be copied: RuntimeError": ("cannot carry (cannot be copied", "无法传输"),
    }
    for why, (en, zh) in cases.items():
        got = Unencodable("torch.Tensor", "tensor(shape=[3])", why)
        for check in (compare.tensor_equal, compare.tensor_close):
            m = check(got, expected, what="input_ids")
            assert m is not None and en in m.en and zh in m.zh, (why, m)
            assert "got torch.Tensor" not in m.en
    m = compare.value_equal(Unencodable("torch.Tensor", "t", "dtype torch.uint16"), [1],
                            what="x")
    assert "dtype torch.uint16" in m.en and "uint16" in m.zh and "torch.int64" not in m.en
    assert "uint8" in m.en  # the dtypes that can be used
    # Other placeholders keep their type's name.
    assert compare.describe_type(Unencodable("int", "<an int of 5001 digits>", "too large")) \
        == "int"
    assert compare.describe_type(Unencodable("numpy.ndarray", "array([])")) == "numpy.ndarray"


def test_value_close_walks_an_optimizer_state_with_tolerance():
    exp = {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.tensor([1.0, 1e-6])}},
           "lr": [0.1, 0.01], "nesterov": False}
    near = {"state": {0: {"step": torch.tensor(3.0),
                          "exp_avg": torch.tensor([1.0 + 1e-9, 1e-6])}},
            "lr": [0.1 + 1e-12, 0.01], "nesterov": False}
    assert compare.value_close(near, exp, what="s", rtol=1e-6) is None
    far = {**near, "lr": [0.2, 0.01]}
    assert compare.value_close(far, exp, what="s", rtol=1e-6).en == \
        "s['lr'][0]: expected 0.1, got 0.2"
    flag = {**near, "nesterov": True}
    assert "s['nesterov']: expected False, got True" in compare.value_close(
        flag, exp, what="s").en
    missing = {"state": {}, "lr": [0.1, 0.01], "nesterov": False}
    assert "missing keys [0]" in compare.value_close(missing, exp, what="s").en


def test_value_close_per_tensor_scale_judges_small_elements_against_their_tensor():
    exp = {"exp_avg_sq": torch.tensor([1.0, 1e-9], dtype=torch.float64)}
    got = {"exp_avg_sq": torch.tensor([1.0, 1.2e-9], dtype=torch.float64)}
    assert compare.value_close(got, exp, what="m", rtol=1e-6, atol=0.0) is not None
    assert compare.value_close(got, exp, what="m", rtol=1e-6, atol=0.0,
                               per_tensor_scale=True) is None
    worse = {"exp_avg_sq": torch.tensor([1.0, 1e-5], dtype=torch.float64)}
    assert compare.value_close(worse, exp, what="m", rtol=1e-6, atol=0.0,
                               per_tensor_scale=True) is not None
