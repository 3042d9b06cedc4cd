"""Comparators: one per concern, one signature.

Each ``check(got, expected, *, what, **opts)`` returns ``None`` when ``got`` is right and
otherwise a :class:`~judge.i18n.T` that says, in the learner's terms, what was expected,
what came back and where (``what`` names the value, such as ``attention_mask``)::

    attention_mask[1, 0]: expected True, got False
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from judge.i18n import T
from sandbox.dtypes import DTYPES
from sandbox.protocol import Unencodable

MAX_SHOWN = 8
CARRIED = ", ".join(DTYPES)


def describe_type(v: Any, lang: str = "en") -> str:
    """What a learner would call the type of a value that came back (in ``lang``, "zh" or
    "en", where it needs words: a tensor the judge could not carry says why)."""
    if isinstance(v, Unencodable):
        if v.why and v.type.startswith("torch."):
            return unsupported_tensor(v)(lang)
        return v.type
    if isinstance(v, torch.Tensor):
        return f"Tensor(dtype={v.dtype}, shape={list(v.shape)})"
    return type(v).__name__


def unsupported_tensor(v: Unencodable) -> T:
    """A tensor the runner could not send (``why`` is what the runner's encoder said: a
    dtype, layout or device the protocol has no way to carry), in the learner's terms."""
    why = v.why
    what = why.partition(" ")[2]
    if why.startswith("dtype "):
        return T(f"dtype 为 {what} 的 torch.Tensor（评测系统无法传输这种 dtype，"
                 f"请使用 {CARRIED} 之一）",
                 f"a torch.Tensor of dtype {what}, which the judge cannot carry "
                 f"(use one of {CARRIED})")
    if why.startswith("layout "):
        return T(f"layout 为 {what} 的 torch.Tensor（评测系统只能传输稠密张量，"
                 f"例如先调用 .to_dense()）",
                 f"a torch.Tensor with layout {what}, which the judge cannot carry "
                 f"(only dense tensors: call .to_dense() first)")
    if why == "nested":
        return T("嵌套张量 (nested tensor)（评测系统只能传输稠密张量，请先填充成普通张量）",
                 "a nested tensor, which the judge cannot carry (pad it into a dense tensor)")
    if why.startswith("quantized"):
        return T(f"量化张量（{why}）（评测系统无法传输，请先 .dequantize()）",
                 f"a quantized torch.Tensor ({why}), which the judge cannot carry "
                 f"(call .dequantize() first)")
    if why == "device meta":
        return T("meta 设备上的 torch.Tensor（它没有数值，评测系统无法传输）",
                 "a torch.Tensor on the meta device, which has no values to carry")
    return T(f"评测系统无法传输的 torch.Tensor（{why}）",
             f"a torch.Tensor the judge cannot carry ({why})")


def show(v: Any) -> str:
    """A short, readable rendering of a value for a message."""
    if isinstance(v, Unencodable):
        return f"{v.type} {v.repr}"
    if isinstance(v, torch.Tensor):
        if v.numel() <= 16:
            return f"tensor({v.tolist()})"
        return f"tensor(shape={list(v.shape)}, dtype={v.dtype})"
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def index_str(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def is_type(got: Any, expected: type | tuple[type, ...], *, what: str) -> T | None:
    if isinstance(got, expected) and not (expected is int and isinstance(got, bool)):
        return None
    names = (" / ".join(t.__name__ for t in expected) if isinstance(expected, tuple)
             else expected.__name__)
    return T(f"{what}：期望 {names}，得到 {describe_type(got, 'zh')}",
             f"{what}: expected {names}, got {describe_type(got)}")


def tensor_meta(got: Any, expected: torch.Tensor, *, what: str) -> T | None:
    """A tensor of the expected dtype and shape."""
    if not isinstance(got, torch.Tensor):
        return T(f"{what}：期望一个张量 (torch.Tensor)，得到 {describe_type(got, 'zh')}",
                 f"{what}: expected a torch.Tensor, got {describe_type(got)}")
    if got.dtype != expected.dtype:
        return T(f"{what}：期望 dtype 为 {expected.dtype}，得到 {got.dtype}",
                 f"{what}: expected dtype {expected.dtype}, got {got.dtype}")
    if got.shape != expected.shape:
        return T(f"{what}：期望形状 {list(expected.shape)}，得到 {list(got.shape)}",
                 f"{what}: expected shape {list(expected.shape)}, got {list(got.shape)}")
    return None


def _first_mismatch(bad: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in bad.nonzero()[0].tolist())


def tensor_equal(got: Any, expected: torch.Tensor, *, what: str) -> T | None:
    """Same dtype, shape and values (NaN equals NaN)."""
    if (m := tensor_meta(got, expected, what=what)) is not None:
        return m
    if expected.numel() == 0:
        return None
    if expected.dtype.is_floating_point or expected.dtype.is_complex:
        bad = (got != expected) & ~(got.isnan() & expected.isnan())
    else:
        bad = got != expected
    if not bool(bad.any()):
        return None
    idx = _first_mismatch(bad)
    count = int(bad.sum())
    e, g = expected[idx].item(), got[idx].item()
    return T(f"{what}{index_str(idx)}：期望 {e!r}，得到 {g!r}（共 {count} 处不同）",
             f"{what}{index_str(idx)}: expected {e!r}, got {g!r} ({count} differ)")


def tensor_close(got: Any, expected: torch.Tensor, *, what: str,
                 rtol: float = 1e-5, atol: float = 1e-8) -> T | None:
    """Same dtype and shape; values within ``atol + rtol * |expected|``."""
    if (m := tensor_meta(got, expected, what=what)) is not None:
        return m
    if expected.numel() == 0:
        return None
    g, e = got.double(), expected.double()
    bad = ~torch.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if not bool(bad.any()):
        return None
    idx = _first_mismatch(bad)
    worst = float(((g - e).abs() / (e.abs() + atol)).nan_to_num(math.inf).max())
    return T(f"{what}{index_str(idx)}：期望 {e[idx].item():.8g}，得到 {g[idx].item():.8g}"
             f"（最大相对误差 {worst:.3g}，允许 rtol={rtol:g}, atol={atol:g}）",
             f"{what}{index_str(idx)}: expected {e[idx].item():.8g}, got {g[idx].item():.8g}"
             f" (worst relative error {worst:.3g}; allowed rtol={rtol:g}, atol={atol:g})")


def float_close(got: Any, expected: float, *, what: str,
                rtol: float = 1e-6, atol: float = 1e-9) -> T | None:
    """A Python float (an int or a 0-d tensor's .item() is accepted) close to expected."""
    if isinstance(got, bool) or not isinstance(got, int | float):
        return T(f"{what}：期望一个 float，得到 {describe_type(got, 'zh')}",
                 f"{what}: expected a float, got {describe_type(got)}")
    if math.isclose(float(got), expected, rel_tol=rtol, abs_tol=atol) or (
            math.isnan(expected) and math.isnan(got)):
        return None
    e, g = _float(expected), _float(float(got))
    return T(f"{what}：期望 {e}，得到 {g}", f"{what}: expected {e}, got {g}")


def _float(x: float) -> str:
    """A float as Python writes it (0.0, not 0), to ten significant digits at most."""
    short = f"{x:.10g}"
    return short if any(c in short for c in ".eni") else short + ".0"


def keys_equal(got: Any, expected: dict, *, what: str) -> T | None:
    """A dict with exactly the expected keys."""
    if not isinstance(got, dict):
        return T(f"{what}：期望一个 dict，得到 {describe_type(got, 'zh')}",
                 f"{what}: expected a dict, got {describe_type(got)}")
    missing = [k for k in expected if k not in got]
    extra = [k for k in got if k not in expected]
    if not missing and not extra:
        return None
    parts_zh, parts_en = [], []
    if missing:
        parts_zh.append(f"缺少键 {missing}")
        parts_en.append(f"missing keys {missing}")
    if extra:
        parts_zh.append(f"多出键 {extra}")
        parts_en.append(f"unexpected keys {extra}")
    return T(f"{what}：{'，'.join(parts_zh)}（应当恰好是 {list(expected)}）",
             f"{what}: {', '.join(parts_en)} (expected exactly {list(expected)})")


def value_equal(got: Any, expected: Any, *, what: str) -> T | None:
    """Deep equality over dicts, lists, tuples, scalars and tensors, with the path of the
    first difference. Lists and tuples are not interchangeable; ints and floats are. A
    value is equal to itself (a float NaN too, as NaN equals NaN in tensors): arguments a
    runner answered "unchanged" come back as the very objects the case sent, and walking
    a batch's hundreds of tensors to compare each with itself was 4 % of a
    padding-collate judging's grader time (cProfile)."""
    if got is expected:
        return None
    return _deep(got, expected, what, _leaf_equal)


def value_close(got: Any, expected: Any, *, what: str, rtol: float = 1e-5,
                atol: float = 1e-8, per_tensor_scale: bool = False) -> T | None:
    """Deep comparison like :func:`value_equal`, but floating tensors and floats need only
    be within ``atol + rtol * |expected|`` (an optimizer's ``state_dict()``, a list of
    per-step records). Integer and bool tensors, ints, strings and None must be equal.
    With ``per_tensor_scale``, a tensor's ``atol`` grows by ``rtol`` times its largest
    finite element: an element near zero is judged against the scale of its tensor (Adam's
    moments hold elements many orders apart)."""

    def leaf(g: Any, e: Any, w: str) -> T | None:
        if isinstance(e, torch.Tensor) and (e.dtype.is_floating_point or e.dtype.is_complex):
            finite = e[e.isfinite()] if per_tensor_scale else None
            scale = float(finite.abs().max()) if finite is not None and finite.numel() else 0.0
            return tensor_close(g, e, what=w, rtol=rtol, atol=atol + rtol * scale)
        if isinstance(e, float):
            return float_close(g, e, what=w, rtol=rtol, atol=atol)
        return _leaf_equal(g, e, w)

    return _deep(got, expected, what, leaf)


Leaf = Callable[[Any, Any, str], "T | None"]


def _deep(got: Any, expected: Any, what: str, leaf: Leaf) -> T | None:
    if isinstance(expected, dict):
        if (m := keys_equal(got, expected, what=what)) is not None:
            return m
        for k, v in expected.items():
            if (m := _deep(got[k], v, f"{what}[{k!r}]", leaf)) is not None:
                return m
        return None
    if isinstance(expected, list | tuple):
        if type(got) is not type(expected):
            return T(f"{what}：期望 {type(expected).__name__}，得到 {describe_type(got, 'zh')}",
                     f"{what}: expected a {type(expected).__name__}, got {describe_type(got)}")
        if len(got) != len(expected):
            return T(f"{what}：期望长度 {len(expected)}，得到 {len(got)}",
                     f"{what}: expected length {len(expected)}, got {len(got)}")
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            if (m := _deep(g, e, f"{what}[{i}]", leaf)) is not None:
                return m
        return None
    return leaf(got, expected, what)


def _leaf_equal(got: Any, expected: Any, what: str) -> T | None:
    if isinstance(expected, torch.Tensor):
        return tensor_equal(got, expected, what=what)
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        ok = type(got) is type(expected) and got == expected
    elif isinstance(expected, int | float):
        ok = isinstance(got, int | float) and not isinstance(got, bool) and got == expected
    else:
        ok = got == expected
    if ok:
        return None
    return T(f"{what}：期望 {show(expected)}，得到 {show(got)}",
             f"{what}: expected {show(expected)}, got {show(got)}")
