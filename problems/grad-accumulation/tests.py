"""Tests for grad-accumulation. Public cases first; hidden ones draw fresh inputs per seed.

Every case builds a setup (model spec, data, micro-batch sizes, optimizer, ...) here in the
grader and runs fixture.py's ``train`` scenario for the submission and for the reference.
The scenario records the gradients and the learning rate at every optimizer step, the
parameters after it, and the order of the optimizer's and scheduler's calls; Comparison
checks all of that, and the returned losses, against the reference's. When a step differs,
diagnose_step() recomputes the window here, in the grader, to name the likely bug.
"""

import importlib.util
from pathlib import Path

import torch

from judge import compare
from judge.i18n import T
from judge.testing import case, workload
from judge.throughput import Workload


def _load_fixture():
    """fixture.py's model, loader and optimizer builders, imported here (the grader's own
    copy), so that the grader can rebuild exactly what the scenario built."""
    path = Path(__file__).with_name("fixture.py")
    spec = importlib.util.spec_from_file_location(f"{__name__}_fixture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIXTURE = _load_fixture()

# float64 everywhere: correct solutions agree to ~1e-15, while real bugs are off by 10% or
# more, so the tolerances leave room for harmless differences: a float32 constant or loss
# accumulator (returned losses: 1e-5), and clip_grad_norm_'s (norm + 1e-6) against a
# hand-written clip by the norm alone (1e-4 with clipping). Elements are judged against the
# scale of the model's gradients (or parameters) at that step: atol grows with the largest
# of them, so an element near zero is not held to a precision that rounding elsewhere in
# the same sums cannot give.
TIGHT = {"rtol": 1e-6, "atol": 1e-9}
CLIP = {"rtol": 1e-4, "atol": 1e-7}
LOSS_RTOL = 1e-5
SEP = T(" —— ", " — ")


# ---------------------------------------------------------------- inputs


def unequal_sizes(t, count, low=2, high=12):
    """``count`` micro-batch sizes, never all the same."""
    sizes = [t.random.randint(low, high) for _ in range(count)]
    if count > 1 and len(set(sizes)) == 1:
        sizes[t.random.randrange(count)] = low if sizes[0] != low else high
    return sizes


def make_setup(t, sizes, accum_steps, *, kind="mlp", loss=None, optimizer=None,
               scheduler=None, stale_grads=False, epochs=1, device="cpu"):
    """A setup for fixture.train: a random model of ``kind`` and random data (cases that
    clip set ``max_grad_norm`` afterwards, from the gradient's actual norm)."""
    if loss is None:
        loss = "cross_entropy" if kind == "embedding" else "mse"
    out = t.random.randint(2, 5) if loss == "cross_entropy" else t.random.randint(1, 3)
    n = sum(sizes)
    if kind == "conv":
        channels, length = t.random.randint(2, 3), t.random.randint(4, 7)
        dims = [channels, length, t.random.randint(3, 6), out]
        x = torch.randn(n, channels, length, generator=t.rng, dtype=torch.float64)
    elif kind == "embedding":
        vocab = t.random.randint(12, 30)
        dims = [vocab, t.random.randint(6, 12), out]
        x = torch.randint(0, vocab, (n, t.random.randint(3, 6)), generator=t.rng)
    else:
        dims = [t.random.randint(3, 8), t.random.randint(6, 16), out]
        x = torch.randn(n, dims[0], generator=t.rng, dtype=torch.float64)
    if loss == "cross_entropy":
        y = torch.randint(0, out, (n,), generator=t.rng)
    else:
        y = torch.randn(n, out, generator=t.rng, dtype=torch.float64)
    return {"model": {"kind": kind, "sizes": dims, "seed": t.random.randrange(2**31)},
            "x": x, "y": y, "batch_sizes": list(sizes), "loss": loss,
            "accum_steps": accum_steps, "optimizer": optimizer or {"name": "sgd", "lr": 0.1},
            "scheduler": scheduler, "max_grad_norm": None,
            "stale_grads": t.random.randrange(2**31) if stale_grads else None,
            "epochs": epochs, "device": device}


# ---------------------------------------------------------------- windows and steps


class Layout:
    """Which micro-batches each optimizer step should cover, for checks and messages."""

    def __init__(self, setup):
        sizes, k = setup["batch_sizes"], setup["accum_steps"]
        self.sizes, self.accum_steps, self.epochs = sizes, k, setup.get("epochs", 1)
        self.per_epoch = [list(range(i, min(i + k, len(sizes)))) for i in range(0, len(sizes), k)]
        self.steps = [(e, w) for e in range(self.epochs) for w in self.per_epoch]

    def describe(self, step):
        """'optimizer step 3 of 4 (micro-batches [6, 7] ...)' in both languages."""
        epoch, window = self.steps[step]
        sizes = [self.sizes[i] for i in window]
        last = step == len(self.steps) - 1 or self.steps[step + 1][0] != epoch
        short = last and len(window) < self.accum_steps
        zh_epoch = f"第 {epoch + 1} 个 epoch 的" if self.epochs > 1 else ""
        en_epoch = f"epoch {epoch + 1}, " if self.epochs > 1 else ""
        zh = (f"第 {step + 1} 次 optimizer.step()（共 {len(self.steps)} 次；{zh_epoch}窗口为第 "
              f"{window} 个 micro-batch（从 0 数），大小 {sizes}，共 {sum(sizes)} 个样本"
              f"{'，是最后一个不满的窗口' if short else ''}；accum_steps={self.accum_steps}）")
        en = (f"optimizer step {step + 1} of {len(self.steps)} ({en_epoch}the window of "
              f"micro-batches {window} (from 0), sizes {sizes} = {sum(sizes)} samples"
              f"{'; the last, short window' if short else ''}; "
              f"accum_steps={self.accum_steps})")
        return T(zh, en)

    def overview(self):
        windows = [[self.sizes[i] for i in w] for w in self.per_epoch]
        return T(f"{len(self.sizes)} 个 micro-batch，大小 {self.sizes}，accum_steps="
                 f"{self.accum_steps}，窗口 {windows}",
                 f"{len(self.sizes)} micro-batches of sizes {self.sizes}, accum_steps="
                 f"{self.accum_steps}, windows {windows}")


# ---------------------------------------------------------------- the grader's own math


def flat(tensors):
    return torch.cat([g.reshape(-1).double() for g in tensors])


def scaled(tol, expected):
    """Tolerances for a list of tensors (a model's gradients or parameters): atol grows
    with the largest element of them all."""
    biggest = max((float(e.double().abs().max()) for e in expected
                   if isinstance(e, torch.Tensor) and e.numel()), default=0.0)
    return {"rtol": tol["rtol"], "atol": tol["atol"] + tol["rtol"] * biggest}


def rel_diff(a, b):
    return float((a - b).norm() / max(float(b.norm()), 1e-30))


def clipped(vec, max_norm):
    """What clip_grad_norm_ does to the gradient, as one flat vector."""
    if max_norm is None:
        return vec
    return vec * min(1.0, max_norm / (float(vec.norm()) + 1e-6))


def model_at(setup, params):
    model = FIXTURE.build_model(setup["model"])
    with torch.no_grad():
        for p, v in zip(model.parameters(), params, strict=True):
            p.copy_(v)
    return model


def micro_batch(setup, i):
    start = sum(setup["batch_sizes"][:i])
    end = start + setup["batch_sizes"][i]
    return setup["x"][start:end], setup["y"][start:end]


def summed(setup, params, indices):
    """For each micro-batch: (its summed loss, the gradient of that sum as a flat vector)."""
    model = model_at(setup, params)
    loss_fn = FIXTURE.LOSSES[setup["loss"]]
    out = []
    for i in indices:
        model.zero_grad(set_to_none=False)
        x, y = micro_batch(setup, i)
        loss = loss_fn(model(x), y)
        loss.backward()
        out.append((float(loss.detach()), flat(p.grad for p in model.parameters())))
    return out


def big_batch(setup, params, indices):
    """The mean loss over the window's samples, as ONE batch, and its gradient."""
    model = model_at(setup, params)
    parts = [micro_batch(setup, i) for i in indices]
    x, y = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
    loss = FIXTURE.LOSSES[setup["loss"]](model(x), y) / len(y)
    loss.backward()
    return float(loss.detach()), [p.grad.detach().clone() for p in model.parameters()]


def initial_params(setup):
    return [p.detach().clone() for p in FIXTURE.build_model(setup["model"]).parameters()]


def params_before(setup, exp, step):
    return initial_params(setup) if step == 0 else exp["steps"][step - 1]["params"]


# ---------------------------------------------------------------- hints


SAMPLES = T("应当除以窗口里的样本数，而不是 accum_steps 或 micro-batch 的个数："
            "micro-batch 大小不同，最后一个窗口也可能不满",
            "normalise by the number of samples in the window, not by accum_steps or the "
            "number of micro-batches: micro-batches differ in size and the last window may "
            "be short")
MEAN_OF_MEANS = T("loss_fn 返回的是 micro-batch 的损失之和；先除以各自的大小再平均，"
                  "小 micro-batch 里的样本权重就变大了。"
                  "应当把整个窗口的损失之和除以窗口的样本数",
                  "loss_fn returns the SUM over the micro-batch; dividing each by its size "
                  "and then averaging weights the samples of small micro-batches more. "
                  "Divide the window's summed loss by the window's number of samples")
UNNORMALISED = T("梯度应当是窗口平均损失的梯度：除以窗口里的样本数",
                 "the gradient must be that of the window's MEAN loss: divide by its number "
                 "of samples")
ZERO_EACH = T("只剩下最后一个 micro-batch 的梯度：zero_grad() 每个窗口调用一次"
              "（在窗口开始时），不是每个 micro-batch 一次",
              "only the last micro-batch's gradient reached the step: call zero_grad() once "
              "per window (at its start), not once per micro-batch")
OFF_BY_ONE = T("第一步只用了第一个 micro-batch：窗口是 [0, accum_steps)、"
               "[accum_steps, 2·accum_steps)……，检查 (i + 1) % accum_steps == 0 这类条件",
               "the first step covered the first micro-batch alone: windows are "
               "[0, accum_steps), [accum_steps, 2·accum_steps), ... — check a condition "
               "like (i + 1) % accum_steps == 0")
LEAK = T("上一个窗口的梯度没有清掉，漏进了这一步：每个窗口开始时清空梯度",
         "the previous window's gradient was still there: clear the gradients at the start "
         "of every window")
STALE = T("调用 train_epoch 时参数上已有的梯度漏进了第一步：第一个窗口开始前也要清空梯度",
          "gradients already on the parameters when train_epoch was called leaked into the "
          "first step: clear them before the first window too")
NOT_CLIPPED = T("梯度没有按总范数裁剪：在 optimizer.step() 之前调用 "
                "clip_grad_norm_(model.parameters(), max_grad_norm)"
                "（clip_grad_value_ 是逐元素截断，不是一回事）",
                "the gradient was not clipped by its total norm: call "
                "clip_grad_norm_(model.parameters(), max_grad_norm) right before "
                "optimizer.step() (clip_grad_value_ clamps elements, which is not the same)")
CLIP_ONCE = T("只裁剪一次：整个窗口累积完并且归一化（除以样本数）之后、step 之前",
              "clip once: after the whole window has been accumulated and normalised "
              "(divided by its samples), right before the step")
CLIP_TOTAL = T("要裁剪的是所有参数合在一起的总范数：对 model.parameters() 调用一次 "
               "clip_grad_norm_，而不是对每个参数分别裁剪",
               "clip the total norm of all parameters together: one clip_grad_norm_ call on "
               "model.parameters(), not one per parameter")
CLIP_UP = T("手写的裁剪要乘以 min(1, max_grad_norm / (norm + 1e-6))："
            "范数已经低于 max_grad_norm 的梯度保持不变，不能被放大到 max_grad_norm",
            "a hand-written clip multiplies by min(1, max_grad_norm / (norm + 1e-6)): a "
            "gradient whose norm is already below max_grad_norm stays as it is; it must not "
            "be scaled up to max_grad_norm")
WINDOWS = T("窗口是 accum_steps 个连续的 micro-batch，不管每个有多大：按 micro-batch 的个数"
            "决定什么时候 step，不是按样本数（只有最后一个窗口可以不满）",
            "a window is accum_steps consecutive micro-batches, whatever their sizes: count "
            "micro-batches, not samples, to decide when to step (only the last window may be "
            "shorter)")
CLIP_VALUE = T("clip_grad_value_ 是逐个元素截断，会改变梯度的方向；要用 clip_grad_norm_，"
               "它按总范数把整个梯度等比例缩小",
               "clip_grad_value_ clamps each element, which changes the gradient's direction; "
               "use clip_grad_norm_, which scales the whole gradient down by its total norm")
NONE_GRAD = T("这个参数在 step 时没有梯度（None）："
              "是不是在 backward 之后、step 之前清空了梯度？",
              "this parameter had no gradient (None) at the step: were the gradients cleared "
              "between backward and the step?")
BIG_BATCH = T("每一步的梯度应当等于把整个窗口当作一个大批次、对平均损失求的梯度",
              "each step's gradient must equal that of the mean loss over the whole window "
              "taken as one big batch")
SCHEDULER = T("每次 optimizer.step() 之后调用一次 scheduler.step()，"
              "不要按 micro-batch 或按 epoch 调用",
              "call scheduler.step() once after each optimizer.step(), not per micro-batch "
              "or per epoch")
LOSS_SUM = T("这是窗口的损失之和：除以窗口里的样本数",
             "that is the window's SUM of losses: divide it by the window's number of samples")
LOSS_LAST = T("这只是最后一个 micro-batch 的损失", "that is the last micro-batch's loss alone")
LOSS_MEANS = T("先对每个 micro-batch 求平均再平均，小 micro-batch 的样本权重更大："
               "把窗口的损失之和除以窗口的样本数",
               "averaging micro-batch means weights the samples of small micro-batches more: "
               "divide the window's summed loss by its number of samples")
LOSS_DEFINITION = T("返回每个窗口的平均每样本损失：窗口内各 micro-batch 的 loss_fn 之和"
                    "（step 之前的那些前向）除以窗口的样本数",
                    "return each window's mean per-sample loss: the sum of loss_fn over the "
                    "window's micro-batches (the forward passes before its step) divided by "
                    "its number of samples")


# ---------------------------------------------------------------- diagnosis


def diagnose_step(setup, layout, step, got, exp):
    """A hint naming the likely bug behind a wrong gradient at ``step``: the grader
    recomputes each micro-batch of the window and matches what came back against the
    gradients that known bugs produce."""
    got_grads = got["steps"][step]["grads"]
    if any(not isinstance(g, torch.Tensor) for g in got_grads):
        return NONE_GRAD
    indices = layout.steps[step][1]
    grads = [g for _, g in summed(setup, params_before(setup, exp, step), indices)]
    sizes = [layout.sizes[i] for i in indices]
    n, m, k = sum(sizes), len(sizes), layout.accum_steps
    total = sum(grads)
    means = sum(g / b for g, b in zip(grads, sizes, strict=True))
    right = total / n
    candidates = [(total / k, SAMPLES), (total / m, SAMPLES), (means / k, MEAN_OF_MEANS),
                  (means / m, MEAN_OF_MEANS), (total, UNNORMALISED)]
    candidates += [(grads[-1] / d, ZERO_EACH) for d in (n, k, sizes[-1], sizes[-1] * k, 1)]
    if indices[0] == 0 and m > 1:
        candidates.append((grads[0] / sizes[0], OFF_BY_ONE))
    if step > 0:
        candidates.append((right + flat(got["steps"][step - 1]["grads"]), LEAK))
    if step == 0 and setup.get("stale_grads") is not None:
        model = FIXTURE.build_model(setup["model"])
        stale = flat(FIXTURE.stale_gradients(model, setup["stale_grads"]))
        candidates.append((right + stale, STALE))
    clip = setup.get("max_grad_norm")
    candidates = [(clipped(v, clip), why) for v, why in candidates]
    if clip is not None and float(right.norm()) + 1e-6 < clip:
        # a clip without min(1, coef): the gradient scaled UP to max_grad_norm (first: with
        # a large window this also equals the clipped unnormalised sum)
        candidates.insert(0, (right * (clip / (float(right.norm()) + 1e-6)), CLIP_UP))
    if clip is not None:
        per_micro_batch = torch.zeros_like(right)
        for g in grads:
            per_micro_batch = clipped(per_micro_batch + g / n, clip)
        candidates += [(right, NOT_CLIPPED), (clipped(total, clip) / n, CLIP_ONCE),
                       (per_micro_batch, CLIP_ONCE), (clipped(total, clip), CLIP_ONCE)]
    got_vec = flat(got_grads)
    for vec, why in candidates:
        if rel_diff(got_vec, vec) < 1e-5:
            return why + (zero_grad_facts(got["calls"]) if why in (LEAK, STALE) else T("", ""))
    norm = float(got_vec.norm())
    if clip is not None and norm > clip * (1 + 1e-4):
        # Clipped, but not by the total norm: each parameter on its own, or element-wise.
        if all(float(g.norm()) <= clip * (1 + 1e-4) for g in got_grads):
            return CLIP_TOTAL
        if float(got_vec.abs().max()) <= clip * (1 + 1e-6):
            return CLIP_VALUE
        return T(f"step 时梯度的总范数是 {norm:.6g}，超过了 max_grad_norm={clip:g}",
                 f"the gradient's total norm at the step was {norm:.6g}, above "
                 f"max_grad_norm={clip:g}") + SEP + NOT_CLIPPED
    return window_hint(setup, layout, step, got, exp) or BIG_BATCH


def window_hint(setup, layout, step, got, exp):
    """When the submission's step ``step`` used the mean-loss gradient of other
    micro-batches than its window (from the window's start to another end: windows cut by
    sample count, say), a hint that says which; else None. Earlier steps matched, so the
    step began where its window begins."""
    grads = got["steps"][step]["grads"]
    if any(not isinstance(g, torch.Tensor) for g in grads):
        return None
    got_vec, clip = flat(grads), setup.get("max_grad_norm")
    window = layout.steps[step][1]
    params = params_before(setup, exp, step)
    for end in range(window[0] + 1, len(layout.sizes) + 1):
        if end == window[-1] + 1:
            continue
        vec = clipped(flat(big_batch(setup, params, range(window[0], end))[1]), clip)
        if rel_diff(got_vec, vec) < 1e-5:
            used = list(range(window[0], end))
            sizes = [layout.sizes[i] for i in used]
            return T(f"这一步用的是第 {used} 个 micro-batch（大小 {sizes}，"
                     f"共 {sum(sizes)} 个样本），不是窗口 {window}。",
                     f"this step used micro-batches {used} (sizes "
                     f"{sizes}, {sum(sizes)} samples), not the window {window}: ") + WINDOWS
    return None


def zero_grad_facts(calls):
    """What the recorded calls say about optimizer.zero_grad() (model.zero_grad() and
    clearing .grad by hand are not recorded, so this only reports what was seen)."""
    if "zero_grad" not in calls:
        return T("（optimizer.zero_grad() 一次也没有被调用）",
                 " (optimizer.zero_grad() was never called)")
    if "step" in calls and calls.index("step") < calls.index("zero_grad"):
        return T("（第一次 optimizer.zero_grad() 在第一次 step 之后）",
                 " (the first optimizer.zero_grad() came after the first step)")
    return T("", "")


def diagnose_loss(setup, layout, step, got_value, exp, exp_value):
    """A hint for a wrong returned loss of the window of ``step``."""
    indices = layout.steps[step][1]
    sizes = [layout.sizes[i] for i in indices]
    n, m, k = sum(sizes), len(sizes), layout.accum_steps
    sums = [s for s, _ in summed(setup, params_before(setup, exp, step), indices)]
    means = sum(s / b for s, b in zip(sums, sizes, strict=True))
    candidates = [(exp_value * n, LOSS_SUM), (exp_value * n / k, SAMPLES),
                  (exp_value * n / m, SAMPLES), (means / m, LOSS_MEANS), (means / k, LOSS_MEANS),
                  (sums[-1] / sizes[-1], LOSS_LAST), (sums[-1] / n, LOSS_LAST)]
    for value, why in candidates:
        if abs(got_value - value) <= 1e-6 * max(abs(value), 1e-12):
            return why
    return LOSS_DEFINITION


def step_count_hint(layout, got_count, same_prefix):
    """Why the submission made ``got_count`` steps; ``same_prefix``: its steps so far used
    the gradients the reference's did (its windows were right, as far as they go)."""
    micro_batches = len(layout.sizes) * layout.epochs
    full_windows = (len(layout.sizes) // layout.accum_steps) * layout.epochs
    if got_count == micro_batches != len(layout.steps):
        return T("每个 micro-batch 之后都调用了 step："
                 "应当每个窗口（accum_steps 个 micro-batch）一次",
                 "optimizer.step() ran after every micro-batch: it must run once per window of "
                 "accum_steps micro-batches")
    if same_prefix and got_count == full_windows < len(layout.steps):
        return T("最后那个不满 accum_steps 的窗口也要做一次 step，不能丢掉",
                 "the last window, shorter than accum_steps, must make a step too, not be "
                 "dropped")
    return T("每个窗口恰好一次 optimizer.step()", "exactly one optimizer.step() per window")


def scheduler_problem(layout, calls):
    """None when scheduler.step() follows every optimizer.step() exactly once."""
    after = [0]  # after[0]: scheduler calls before the first optimizer step
    for call in calls:
        if call == "step":
            after.append(0)
        elif call == "scheduler.step":
            after[-1] += 1
    if after[0]:
        return T(f"在第一次 optimizer.step() 之前调用了 {after[0]} 次 scheduler.step()",
                 f"scheduler.step() was called {after[0]} time(s) before the first "
                 f"optimizer.step()")
    for step, count in enumerate(after[1:]):
        if count != 1:
            return layout.describe(step) + T(
                f"：之后调用了 {count} 次 scheduler.step()，应当恰好 1 次",
                f": followed by {count} call(s) of scheduler.step(), expected exactly 1")
    return None


# ---------------------------------------------------------------- comparison


def malformed(got):
    """None when the scenario's result has the shape that fixture.train gives it."""
    ok = (isinstance(got, dict) and isinstance(got.get("returned"), list)
          and isinstance(got.get("steps"), list) and isinstance(got.get("calls"), list)
          and isinstance(got.get("final"), list)
          and all(isinstance(s, dict) and isinstance(s.get("grads"), list)
                  and isinstance(s.get("params"), list) and isinstance(s.get("lr"), list)
                  for s in got["steps"]))
    return None if ok else T("场景的返回结果格式不对（代码是否改动了评测的 fixture？）",
                             "the scenario's result is malformed (did the code tamper with the "
                             "judge's fixture?)")


class Comparison:
    """One scenario's result against the reference's; ``fail`` ends the case with the
    first difference, where it happened, and a hint."""

    def __init__(self, t, setup, got, exp, tol):
        self.t, self.setup, self.got, self.exp, self.tol = t, setup, got, exp, tol
        self.layout = Layout(setup)
        self.names = [n for n, _ in FIXTURE.build_model(setup["model"]).named_parameters()]
        self.context = T("\n（", "\n(") + self.layout.overview() + T("）", ")")

    def fail(self, problem, why=None, where=None):
        message = (where + T("：", ": ") if where is not None else T("", "")) + problem
        if why is not None:
            message = message + SEP + why
        self.t.fail(message + self.context)

    def run(self):
        if (problem := malformed(self.got)) is not None:
            self.t.fail(problem)
        self.step_count()
        if self.setup.get("scheduler") is not None and (
                problem := scheduler_problem(self.layout, self.got["calls"])) is not None:
            self.fail(problem, SCHEDULER)
        for step in range(len(self.exp["steps"])):
            self.step(step)
        self.losses()
        final_tol = scaled(self.tol, self.exp["final"])
        for name, g, e in zip(self.names, self.got["final"], self.exp["final"], strict=False):
            if (problem := compare.tensor_close(g, e, what=name, **final_tol)) is not None:
                self.fail(problem, T("最后一次 step 之后不应再改动参数",
                                     "nothing may change the parameters after the last step"),
                          T("train_epoch 返回后的参数",
                            "the parameters after train_epoch returned"))

    def step_count(self):
        got, exp = len(self.got["steps"]), len(self.exp["steps"])
        if got != exp:
            first = next((i for i in range(min(got, exp)) if not self.same_grads(i)), None)
            hint = None
            if first is not None:
                hint = window_hint(self.setup, self.layout, first, self.got, self.exp)
                hint = hint and self.layout.describe(first) + T("：", ": ") + hint
            self.fail(T(f"optimizer.step() 的次数：期望 {exp}，得到 {got}",
                        f"number of optimizer.step() calls: expected {exp}, got {got}"),
                      hint or step_count_hint(self.layout, got, first is None))

    def same_grads(self, step):
        """Whether the submission's step ``step`` used the reference's gradients."""
        g, e = self.got["steps"][step]["grads"], self.exp["steps"][step]["grads"]
        tol = scaled(self.tol, e)
        return len(g) == len(e) and all(
            compare.tensor_close(a, b, what="grad", **tol) is None
            for a, b in zip(g, e, strict=True))

    def step(self, step):
        g, e = self.got["steps"][step], self.exp["steps"][step]
        where = self.layout.describe(step)
        grad_tol = scaled(self.tol, e["grads"])
        for name, got, exp in zip(self.names, g["grads"], e["grads"], strict=False):
            if (problem := compare.tensor_close(got, exp, what=f"{name}.grad",
                                                **grad_tol)) is not None:
                why = diagnose_step(self.setup, self.layout, step, self.got, self.exp)
                self.fail(problem, why, where)
        if (problem := compare.value_equal(len(g["grads"]), len(e["grads"]),
                                           what="len(grads)")) is not None:
            self.fail(problem, None, where)
        for got, exp in zip(g["lr"], e["lr"], strict=False):
            if (problem := compare.float_close(got, exp, what="lr", rtol=1e-12)) is not None:
                self.fail(problem, SCHEDULER, where)
        param_tol = scaled(self.tol, e["params"])
        for name, got, exp in zip(self.names, g["params"], e["params"], strict=False):
            if (problem := compare.tensor_close(got, exp, what=name, **param_tol)) is not None:
                self.fail(problem, T("step 用的梯度是对的，更新后的参数却不对："
                                     "是否在 optimizer.step() 之外改动了参数或优化器？",
                                     "the step's gradient was right but the parameters after "
                                     "it are not: were the parameters or the optimizer changed "
                                     "outside optimizer.step()?"),
                          where + T("，step 之后的参数", ", the parameters after the step"))

    def losses(self):
        step = 0
        for epoch, (got, exp) in enumerate(zip(self.got["returned"], self.exp["returned"],
                                               strict=False)):
            what = "train_epoch(...)" + (f" (epoch {epoch + 1})" if self.layout.epochs > 1
                                         else "")
            if not isinstance(got, list):
                self.fail(compare.is_type(got, list, what=what),
                          T("返回一个 float 列表，每个 optimizer step 一个",
                            "return a list of floats, one per optimizer step"))
            if len(got) != len(exp):
                per_micro_batch = len(got) == len(self.layout.sizes) != len(exp)
                self.fail(T(f"{what} 返回的列表长度：期望 {len(exp)}，得到 {len(got)}",
                            f"{what} returned a list of length {len(got)}, expected "
                            f"{len(exp)}"),
                          T("每个窗口（optimizer step）返回一个，不是每个 micro-batch 一个",
                            "return one value per window (optimizer step), not one per "
                            "micro-batch") if per_micro_batch else LOSS_DEFINITION)
            rtol = max(LOSS_RTOL, self.tol["rtol"])
            for i, (g, e) in enumerate(zip(got, exp, strict=True)):
                problem = compare.float_close(g, e, what=f"{what}[{i}]", rtol=rtol,
                                              atol=self.tol["atol"])
                if problem is None:
                    continue
                if isinstance(g, int | float) and not isinstance(g, bool):
                    why = diagnose_loss(self.setup, self.layout, step + i, float(g), self.exp, e)
                elif isinstance(g, torch.Tensor):
                    why = T("返回 Python float：每个窗口调用一次 .item()",
                            "return Python floats: call .item() once per window")
                else:
                    why = T("返回 Python float", "return Python floats")
                self.fail(problem, why, self.layout.describe(step + i))
            step += len(exp)


def begin(t, setup, tol=TIGHT):
    """Start the scenario for the reference and the submission: the two runners train at
    once (t.ref.begin_scenario). :func:`check` compares them."""
    return setup, tol, t.ref.begin_scenario("train", setup), t.sub.begin_scenario("train", setup)


def check(t, begun):
    """Compare what :func:`begin` started (the submission's errors first); (got, exp)."""
    setup, tol, exp, got = begun
    got, exp = got.value, exp.value
    Comparison(t, setup, got, exp, tol).run()
    return got, exp


def run(t, setup, tol=TIGHT):
    """Run the scenario for the submission and the reference and compare them."""
    return check(t, begin(t, setup, tol))


def ahead(t, *begun):
    """A hidden case's second part: ``yield from ahead(t, begin(...), ...)`` once its
    scenarios are out, so that the grader begins the next case while this one's runners
    train (judge/pipeline.py); then each is compared, in order."""
    yield
    return [check(t, b) for b in begun]


def sig(value, digits=6):
    """``value`` rounded to a few significant digits (a readable max_grad_norm)."""
    return float(f"{value:.{digits}g}")


def first_window_norm(setup):
    """The norm of the first window's (mean-loss) gradient at the initial parameters."""
    window = range(min(setup["accum_steps"], len(setup["batch_sizes"])))
    return float(flat(big_batch(setup, initial_params(setup), window)[1]).norm())


# ---------------------------------------------------------------- public cases


@case(public=True, zh="题面里的例子：y = w·x，micro-batch 大小 [3, 1, 3]，accum_steps=2",
      en="the statement's example: y = w·x, micro-batches of sizes [3, 1, 3], accum_steps=2")
def example_worked(t):
    x = torch.tensor([[1.0], [2.0], [3.0], [4.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    y = torch.tensor([[1.0], [3.0], [2.0], [5.0], [2.0], [2.0], [4.0]], dtype=torch.float64)
    setup = {"model": {"kind": "scalar", "seed": 0,
                       "init": [torch.zeros(1, 1, dtype=torch.float64)]},
             "x": x, "y": y, "batch_sizes": [3, 1, 3], "loss": "mse", "accum_steps": 2,
             "optimizer": {"name": "sgd", "lr": 0.01}}
    got, _ = run(t, setup)
    grads = ", ".join(f"{float(s['grads'][0]):.10g}" for s in got["steps"])
    ws = ", ".join(f"{float(s['params'][0]):.10g}" for s in got["steps"])
    losses = ", ".join(f"{v:.10g}" for v in got["returned"][0])
    t.note(f"每一步的梯度 [{grads}]，step 之后的 w [{ws}]，返回 [{losses}]",
           f"gradients [{grads}], w after each step [{ws}], returned [{losses}]")


@case(public=True, zh="大小不一的 micro-batch，最后一个窗口不满",
      en="unequal micro-batches and a short last window")
def example_short_last_window(t):
    sizes = [5, 2, 7, 3, 4, 6, 1]
    run(t, make_setup(t, sizes, 3))


@case(public=True, zh="梯度裁剪和学习率调度", en="gradient clipping and a scheduler")
def example_clip_and_scheduler(t):
    setup = make_setup(t, [4, 6, 3, 5, 2, 4], 2,
                       scheduler={"name": "step", "step_size": 1, "gamma": 0.5})
    setup["max_grad_norm"] = sig(0.3 * first_window_norm(setup))
    run(t, setup, CLIP)


# ---------------------------------------------------------------- hidden cases


@case(zh="micro-batch 大小不一（窗口都是满的）", en="unequal micro-batch sizes, full windows")
def unequal_microbatches(t):
    k = t.random.randint(2, 4)
    setup = make_setup(t, unequal_sizes(t, k * t.random.randint(2, 3)), k)
    yield from ahead(t, begin(t, setup))


@case(zh="最后一个窗口不满", en="a short last window")
def short_last_window(t):
    k = t.random.randint(3, 5)
    count = k * t.random.randint(1, 3) + t.random.randint(1, k - 1)
    setup = make_setup(t, unequal_sizes(t, count), k,
                       optimizer={"name": "sgd", "lr": 0.05, "momentum": 0.9})
    yield from ahead(t, begin(t, setup))


@case(zh="accum_steps = 1：每个 micro-batch 一步", en="accum_steps = 1: a step per micro-batch")
def accum_steps_one(t):
    setup = make_setup(t, unequal_sizes(t, t.random.randint(3, 6)), 1,
                       optimizer={"name": "adam", "lr": 0.01})
    yield from ahead(t, begin(t, setup))


@case(zh="accum_steps 大于 micro-batch 的个数：只有一个窗口",
      en="accum_steps larger than the number of micro-batches: one window")
def accum_larger_than_loader(t):
    count = t.random.randint(2, 5)
    yield from ahead(t, *(begin(t, make_setup(t, unequal_sizes(t, count), k))
                          for k in (count, count + t.random.randint(1, 6))))


@case(zh="每个窗口恰好一次 optimizer.step()", en="exactly one optimizer.step() per window")
def one_step_per_window(t):
    begun = []
    for k in (2, 3, 4):
        count = t.random.choice([k + 1, 2 * k - 1, 3 * k, 2 * k + 1])
        begun.append(begin(t, make_setup(t, unequal_sizes(t, count, 1, 9), k,
                                         optimizer={"name": "sgd", "lr": 0.05, "momentum": 0.5})))
    yield from ahead(t, *begun)


@case(zh="每一步等于整个窗口当作一个大批次的一步", en="each step equals one big-batch step")
def equals_big_batch(t):
    """Checked against the grader's own big-batch computation, not only the reference."""
    k = t.random.randint(2, 4)
    setup = make_setup(t, unequal_sizes(t, 2 * k + t.random.randint(1, k - 1)), k,
                       optimizer={"name": "sgd", "lr": 0.1})
    [(got, _)] = yield from ahead(t, begin(t, setup))
    layout = Layout(setup)
    names = [name for name, _ in FIXTURE.build_model(setup["model"]).named_parameters()]
    before = initial_params(setup)
    for step, record in enumerate(got["steps"]):
        _, grads = big_batch(setup, before, layout.steps[step][1])
        after = [p - 0.1 * g for p, g in zip(before, grads, strict=True)]
        grad_tol, param_tol = scaled(TIGHT, grads), scaled(TIGHT, after)
        for name, g, e, p1, e1 in zip(names, record["grads"], grads, record["params"], after,
                                      strict=True):
            problem = (compare.tensor_close(g, e, what=f"{name}.grad", **grad_tol)
                       or compare.tensor_close(p1, e1, what=name, **param_tol))
            if problem is not None:
                t.fail(layout.describe(step) + T("，与大批次的一步比较：", ", against one "
                                                 "big-batch step: ") + problem)
        before = record["params"]


@case(zh="梯度裁剪真的起作用（max_grad_norm 小于梯度范数）",
      en="clipping that clips (max_grad_norm below the gradient's norm)")
def clip_active(t):
    k = t.random.randint(2, 4)
    setup = make_setup(t, unequal_sizes(t, 2 * k + t.random.randint(0, k - 1)), k,
                       optimizer={"name": "sgd", "lr": 0.05, "momentum": 0.9})
    setup["max_grad_norm"] = sig(t.random.uniform(0.2, 0.4) * first_window_norm(setup))
    yield from ahead(t, begin(t, setup, CLIP))


@case(zh="梯度裁剪不起作用（max_grad_norm 大于梯度范数）",
      en="clipping that does not clip (max_grad_norm above the gradient's norm)")
def clip_inactive(t):
    k = t.random.randint(2, 3)
    setup = make_setup(t, unequal_sizes(t, 2 * k + 1), k, optimizer={"name": "adam", "lr": 0.01})
    setup["max_grad_norm"] = sig(20 * first_window_norm(setup))
    yield from ahead(t, begin(t, setup, CLIP))


@case(zh="StepLR：每个 optimizer step 之后调用一次", en="StepLR, once after each optimizer step")
def scheduler_step_lr(t):
    k = t.random.randint(2, 3)
    setup = make_setup(t, unequal_sizes(t, 4 * k + 1), k, optimizer={"name": "adam", "lr": 0.02},
                       scheduler={"name": "step", "step_size": 2, "gamma": 0.5})
    yield from ahead(t, begin(t, setup))


@case(zh="LambdaLR 预热：每个 optimizer step 之后调用一次",
      en="LambdaLR warm-up, once after each optimizer step")
def scheduler_warmup(t):
    k = t.random.randint(2, 4)
    setup = make_setup(t, unequal_sizes(t, 3 * k + t.random.randint(1, k - 1)), k,
                       optimizer={"name": "sgd", "lr": 0.1, "momentum": 0.9},
                       scheduler={"name": "warmup", "warmup": 3})
    yield from ahead(t, begin(t, setup))


@case(zh="返回值：每个窗口的平均每样本损失",
      en="returned losses: each window's mean per-sample loss")
def returned_losses(t):
    k = t.random.randint(2, 4)
    setup = make_setup(t, unequal_sizes(t, 3 * k + t.random.randint(1, k - 1), 1, 16), k,
                       loss="cross_entropy")
    yield from ahead(t, begin(t, setup))


@case(zh="梯度不会从一个窗口漏到下一个", en="no gradient leaks into the next window")
def no_leak_between_windows(t):
    k = t.random.randint(2, 3)
    setup = make_setup(t, unequal_sizes(t, 5 * k), k, optimizer={"name": "sgd", "lr": 0.02})
    yield from ahead(t, begin(t, setup))


@case(zh="调用时参数上已有梯度", en="gradients already present when train_epoch is called")
def stale_gradients(t):
    k = t.random.randint(2, 3)
    yield from ahead(t, begin(t, make_setup(t, unequal_sizes(t, 2 * k + 1), k, stale_grads=True)))


@case(zh="连续两个 epoch（优化器和调度器接着用）",
      en="two epochs in a row (the optimizer and scheduler carry on)")
def two_epochs(t):
    k = t.random.randint(2, 3)
    setup = make_setup(t, unequal_sizes(t, 2 * k + 1), k, epochs=2,
                       optimizer={"name": "adam", "lr": 0.01},
                       scheduler={"name": "step", "step_size": 2, "gamma": 0.7})
    yield from ahead(t, begin(t, setup))


@case(zh="SGD：momentum、nesterov、weight_decay", en="SGD with momentum, nesterov, weight_decay")
def sgd_momentum(t):
    k = t.random.randint(2, 4)
    setup = make_setup(t, unequal_sizes(t, 3 * k - 1), k,
                       optimizer={"name": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True,
                                  "weight_decay": 0.01})
    yield from ahead(t, begin(t, setup))


@case(zh="Adam 和 AdamW", en="Adam and AdamW")
def adam_optimizers(t):
    begun = []
    for name in ("adam", "adamw"):
        k = t.random.randint(2, 4)
        begun.append(begin(t, make_setup(t, unequal_sizes(t, 3 * k - 1), k,
                                         optimizer={"name": name, "lr": 0.01,
                                                    "weight_decay": 0.01})))
    yield from ahead(t, *begun)


@case(zh="不同的模型：LayerNorm、Conv1d、EmbeddingBag（交叉熵）",
      en="other models: LayerNorm, Conv1d, EmbeddingBag (cross-entropy)")
def other_models(t):
    begun = []
    for kind in ("layernorm", "conv", "embedding"):
        k = t.random.randint(2, 3)
        begun.append(begin(t, make_setup(t, unequal_sizes(t, 2 * k + 1), k, kind=kind,
                                         optimizer={"name": "adam", "lr": 0.01})))
    yield from ahead(t, *begun)


@case(zh="很小的 micro-batch（1 到 3 个样本）", en="tiny micro-batches (1 to 3 samples)")
def tiny_microbatches(t):
    k = t.random.randint(3, 5)
    yield from ahead(t, begin(t, make_setup(t, unequal_sizes(t, 3 * k + 2, 1, 3), k)))


@case(zh="所有选项一起：裁剪、调度器、Adam、不满的窗口",
      en="everything together: clipping, a scheduler, Adam, a short window")
def everything_together(t):
    k = t.random.randint(2, 4)
    setup = make_setup(t, unequal_sizes(t, 3 * k + 1), k, optimizer={"name": "adam", "lr": 0.02},
                       scheduler={"name": "warmup", "warmup": 2}, stale_grads=True)
    setup["max_grad_norm"] = sig(0.5 * first_window_norm(setup))
    yield from ahead(t, begin(t, setup, CLIP))


@case(zh="空的 loader：不做 step，返回 []", en="an empty loader: no step, returns []")
def empty_loader(t):
    setup = make_setup(t, [], t.random.randint(1, 4),
                       scheduler={"name": "step", "step_size": 1, "gamma": 0.5})
    [(got, _)] = yield from ahead(t, begin(t, setup))
    t.expect_equal(got["calls"].count("scheduler.step"), 0, "scheduler.step() calls")


@case(zh="在 GPU 上（CUDA）", en="on the GPU (CUDA)", device="cuda")
def on_cuda(t):
    k = t.random.randint(2, 4)
    setup = make_setup(t, unequal_sizes(t, 3 * k + 1), k, optimizer={"name": "adam", "lr": 0.02},
                       scheduler={"name": "step", "step_size": 2, "gamma": 0.5},
                       stale_grads=True, device="cuda")
    setup["max_grad_norm"] = sig(0.5 * first_window_norm(setup))
    run(t, setup, CLIP)


# ---------------------------------------------------------------- throughput


def epoch_workload(device, *, micro_batches, low, high, sizes, accum_steps, dtype):
    def make(rng):
        g = torch.Generator().manual_seed(int(torch.randint(0, 2**62, (1,), generator=rng)))
        batch_sizes = torch.randint(low, high + 1, (micro_batches,), generator=g).tolist()
        spec = {"device": device, "batch_sizes": batch_sizes, "accum_steps": accum_steps,
                "model": {"kind": "deep", "sizes": sizes, "dtype": dtype, "init_on_device": True,
                          "seed": int(torch.randint(0, 2**31, (1,), generator=g))},
                "data_seed": int(torch.randint(0, 2**31, (1,), generator=g)),
                "lr": 0.01, "max_grad_norm": 5.0}
        return [spec], {}

    def check(got, exp):
        if not isinstance(got, dict) or not isinstance(got.get("returned"), list):
            return T("train_epoch 应当返回 float 列表", "train_epoch must return a list of floats")
        problem = compare.value_equal(len(got["returned"]), len(exp["returned"]),
                                      what="len(train_epoch(...))")
        for i, (g, e) in enumerate(zip(got["returned"], exp["returned"], strict=False)):
            problem = problem or compare.float_close(g, e, what=f"train_epoch(...)[{i}]",
                                                     rtol=1e-3, atol=1e-6)
        problem = problem or compare.value_equal(len(got.get("final") or []), len(exp["final"]),
                                                 what="len(parameters)")
        for i, (g, e) in enumerate(zip(got.get("final") or [], exp["final"], strict=False)):
            problem = problem or compare.tensor_close(g, e, what=f"parameters[{i}] (sum, sum "
                                                      f"of squares)", rtol=1e-3, atol=1e-4)
        return problem or True

    return Workload(fn="timed_epoch", target="fixture", prepare="prepare_epoch", make=make,
                    check=check)


@workload
def epoch_cpu(device):
    """One epoch of 24 shuffled micro-batches (8 to 40 samples), accum_steps=4, a small
    MLP: a loop over samples instead of micro-batches is several times too slow (48 until
    version 2: the same ratios at twice the time per pair)."""
    return epoch_workload(device, micro_batches=24, low=8, high=40, sizes=[64, 256, 3, 16],
                          accum_steps=4, dtype="float32")


@workload
def epoch_cuda(device):
    """One epoch on the GPU: 64 shuffled micro-batches (256 to 768 samples) loaded from host
    memory (about a millisecond of CPU work each), a model whose forward and backward take
    the GPU about as long. Syncing once per window lets the CPU load the next micro-batch
    while the GPU computes; a host sync per micro-batch makes them take turns."""
    return epoch_workload(device, micro_batches=64, low=256, high=768,
                          sizes=[1024, 2048, 4, 64], accum_steps=8, dtype="float32")
