"""Helpers for the ``tests.py`` of training problems (grader side).

A training problem's scenario (``fixture.py``) records what the learner's code did to a
model and an optimizer — through forward hooks, a hook on the loss tensor, the optimizer's
step hooks — and returns it as plain data (see the guide, "Training problems"). These
helpers compare such records with the reference's and say where they differ::

    from judge.training import load_fixture, tensors_problem, order_problem, modes_problem

    FIXTURE = load_fixture(__file__)                   # the grader's copy of fixture.py
    names = [n for n, _ in FIXTURE.build_model(spec).named_parameters()]
    problem = tensors_problem(got["grads"], exp["grads"], names, suffix=".grad",
                              **scaled(TOL, exp["grads"]))
    if problem is not None:
        t.fail(problem.message + hint_for(problem))   # problem.name, .index, .kind

Every function returns ``None`` when the record is right, so a case reads as a list of
checks; the messages follow judge.compare's (what was expected, what came back, where).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from judge import compare
from judge.i18n import T


def load_fixture(tests_file: str | Path) -> ModuleType:
    """The package's ``fixture.py``, imported in the grader (its own copy, next to
    ``tests_file``), so that tests can rebuild exactly the objects a scenario built: the
    model's parameter names, the stale gradients it planted, a recomputation."""
    path = Path(tests_file).with_name("fixture.py")
    spec = importlib.util.spec_from_file_location(f"{Path(tests_file).parent.name}_fixture",
                                                  path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scaled(tol: dict[str, float], expected: Sequence[Any]) -> dict[str, float]:
    """Tolerances for a list of tensors (a model's gradients or parameters): ``atol`` grows
    with the largest element of them all, so an element near zero is not held to a
    precision that rounding elsewhere in the same sums cannot give."""
    biggest = max((float(e.detach().double().abs().max()) for e in expected
                   if isinstance(e, torch.Tensor) and e.numel() and e.isfinite().all()),
                  default=0.0)
    return {"rtol": tol["rtol"], "atol": tol["atol"] + tol["rtol"] * biggest}


@dataclass(frozen=True)
class Mismatch:
    """The first entry of a named tensor list that differs. ``kind``: "none" (expected
    None, got a tensor), "missing" (expected a tensor, got None or something else),
    "value" (a tensor of the wrong dtype, shape or values), "length" (lists of different
    lengths; ``index`` is -1)."""

    index: int
    name: str
    kind: str
    message: T


def tensors_problem(got: Any, expected: Sequence[torch.Tensor | None], names: Sequence[str],
                    *, suffix: str = "", rtol: float = 1e-6, atol: float = 1e-9,
                    ) -> Mismatch | None:
    """Compare lists of tensors-or-None entry by entry (parameters, buffers, gradients, in
    ``model.parameters()`` order); ``names[i] + suffix`` names entry ``i`` in messages."""
    if not isinstance(got, list | tuple) or len(got) != len(expected):
        n = len(got) if isinstance(got, list | tuple) else compare.describe_type(got)
        return Mismatch(-1, "", "length", T(f"期望 {len(expected)} 个张量，得到 {n}",
                                            f"expected {len(expected)} tensors, got {n}"))
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        what = f"{names[i]}{suffix}"
        if e is None:
            if g is not None:
                return Mismatch(i, names[i], "none", T(
                    f"{what}：期望 None，得到 {compare.describe_type(g, 'zh')}",
                    f"{what}: expected None, got {compare.describe_type(g)}"))
            continue
        if not isinstance(g, torch.Tensor):
            return Mismatch(i, names[i], "missing", T(
                f"{what}：期望一个张量，得到 {compare.describe_type(g, 'zh')}",
                f"{what}: expected a tensor, got {compare.describe_type(g)}"))
        if (m := compare.tensor_close(g, e, what=what, rtol=rtol, atol=atol)) is not None:
            return Mismatch(i, names[i], "value", m)
    return None


def order_problem(got: Any, expected: Sequence[str], *, what: T | None = None) -> T | None:
    """Two logs of calls (``["zero_grad", "forward", "backward", "step"]``): the first
    position where they differ, with both logs in full. ``what`` names an entry ("call")."""
    what = what or T("调用", "call")
    if not isinstance(got, list) or not all(isinstance(c, str) for c in got):
        return T("调用记录格式不对", "the record of calls is malformed")
    if list(got) == list(expected):
        return None
    at = next((i for i, (g, e) in enumerate(zip(got, expected, strict=False)) if g != e),
              min(len(got), len(expected)))
    g = got[at] if at < len(got) else "（结束）"
    e = expected[at] if at < len(expected) else "（结束）"
    g_en = got[at] if at < len(got) else "(the end)"
    e_en = expected[at] if at < len(expected) else "(the end)"
    return T(f"第 {at + 1} 个{what.zh}：期望 {e}，实际 {g}（实际顺序：{', '.join(got)}；"
             f"期望：{', '.join(expected)}）",
             f"{what.en} #{at + 1}: expected {e_en}, got {g_en} (got: {', '.join(got)}; "
             f"expected: {', '.join(expected)})")


def module_names(model: torch.nn.Module) -> list[str]:
    """``model.modules()``'s names for messages: "model", "model.norm", ... with the
    module's class: ``model.norm (BatchNorm1d)``."""
    return [f"model{'.' + n if n else ''} ({type(m).__name__})"
            for n, m in model.named_modules()]


def modes_problem(got: Any, expected: Sequence[bool], names: Sequence[str]) -> T | None:
    """The ``training`` flags of ``model.modules()`` (a fixture records
    ``[m.training for m in model.modules()]``): the first module whose flag differs."""
    if not isinstance(got, list) or len(got) != len(expected):
        return T("模块的 training 标志记录格式不对", "the modules' training flags are malformed")
    for name, g, e in zip(names, got, expected, strict=True):
        if g is not e:
            return T(f"{name}.training：期望 {e}，得到 {g}",
                     f"{name}.training: expected {e}, got {g}")
    return None
