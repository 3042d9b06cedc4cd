"""Tests for token-accumulation. Public cases first; hidden ones draw fresh inputs per seed.

Every case builds a setup (a model spec, micro-batches of token ids and labels, where many
labels are ``ignore_index``, accum_steps, an optimizer) here in the grader and runs
fixture.py's ``train`` scenario for the submission and for the reference. The scenario
records the gradients and the learning rate at every optimizer step, the parameters after
it, and the order of zero_grad / step calls; Comparison checks all of that, and the
returned losses, against the reference's. When a step's gradient differs, diagnose_step()
recomputes each micro-batch of the window here, in the grader, and matches what came back
against the gradients that known bugs produce, to name the likely one.
"""

import torch
import torch.nn.functional as F

from judge import compare
from judge.i18n import T
from judge.testing import case, workload
from judge.throughput import Workload
from judge.training import load_fixture, scaled

# fixture.py's builders, imported here (the grader's own copy), so that the grader rebuilds
# exactly the model the scenario built.
FIXTURE = load_fixture(__file__)

# float64 everywhere: correct solutions agree to ~1e-15, while the bugs are off by 10% or
# more. rtol 1e-6 leaves room for a float32 accumulator of the returned loss or a logits
# upcast/downcast; atol grows with the largest gradient (or parameter) of the step, so an
# element near zero is not held to a precision that rounding elsewhere cannot give.
TIGHT = {"rtol": 1e-6, "atol": 1e-9}
LOSS_RTOL = 1e-5
SEP = T(" —— ", " — ")
IGNORE = -100  # the default ignore_index


# ---------------------------------------------------------------- inputs


def targets_of(t, vocab, ignore, count):
    """``count`` random target ids, never equal to ``ignore``."""
    out = []
    while len(out) < count:
        v = t.random.randrange(vocab)
        if v != ignore:
            out.append(v)
    return out


def make_batch(t, vocab, rows, length, ignore, kind="mixed"):
    """One micro-batch ``(input_ids [rows, length], labels [rows, length])``. Each row has
    real tokens then right padding (id 0); its targets are a span of the real tokens (the
    tokens before it are a prompt). ``kind``: "mixed" (random spans), "dense" (every real
    token a target), "sparse" (at most one target per row, at least one in all), "empty"
    (no target at all)."""
    ids, labels = [], []
    for r in range(rows):
        end = t.random.randint(1, length) if kind != "dense" else length - t.random.randint(
            0, length // 4)
        if kind == "dense":
            start = 0
        elif kind == "sparse":
            start = end - (1 if r == 0 or t.random.random() < 0.3 else 0)
        elif kind == "empty":
            start = end
        else:
            start = t.random.randint(0, end - 1)
        row_ids = [t.random.randrange(1, vocab) for _ in range(end)] + [0] * (length - end)
        row_labels = ([ignore] * start + targets_of(t, vocab, ignore, end - start)
                      + [ignore] * (length - end))
        ids.append(row_ids)
        labels.append(row_labels)
    return torch.tensor(ids, dtype=torch.int64), torch.tensor(labels, dtype=torch.int64)


def make_setup(t, kinds, accum_steps, *, vocab=None, ignore_index=None, optimizer=None,
               stale_grads=False, epochs=1, device="cpu", model=None, shapes=None):
    """A setup for fixture.train: a random model and one micro-batch per entry of
    ``kinds``, of random shapes (or the given ``shapes``: [(rows, length), ...])."""
    vocab = vocab or t.random.randint(5, 12)
    ignore = IGNORE if ignore_index is None else ignore_index
    shapes = shapes or [(t.random.randint(1, 6), t.random.randint(2, 10)) for _ in kinds]
    batches = [make_batch(t, vocab, rows, length, ignore, kind)
               for kind, (rows, length) in zip(kinds, shapes, strict=True)]
    spec = model or {"vocab": vocab, "hidden": t.random.randint(4, 10),
                     "seed": t.random.randrange(2**31)}
    return {"model": spec, "batches": batches, "accum_steps": accum_steps,
            "optimizer": optimizer or {"name": "sgd", "lr": 0.5},
            "ignore_index": ignore_index,
            "stale_grads": t.random.randrange(2**31) if stale_grads else None,
            "epochs": epochs, "device": device}


def mixed_kinds(t, count, *, empty=0):
    """``count`` micro-batch kinds with dense and sparse ones among them (so counts differ
    a lot), and ``empty`` micro-batches without any target."""
    kinds = ["dense", "sparse"] + [t.random.choice(["mixed", "dense", "sparse"])
                                   for _ in range(count - 2)]
    t.random.shuffle(kinds)
    for i in t.random.sample(range(count), empty):
        kinds[i] = "empty"
    return kinds


# ---------------------------------------------------------------- windows and steps


def ignore_of(setup):
    return IGNORE if setup.get("ignore_index") is None else setup["ignore_index"]


def counted(setup, i):
    return int((setup["batches"][i][1] != ignore_of(setup)).sum())


class Layout:
    """Which micro-batches each optimizer step should cover, for checks and messages."""

    def __init__(self, setup):
        n, k = len(setup["batches"]), setup["accum_steps"]
        self.accum_steps, self.epochs = k, setup.get("epochs", 1)
        self.counts = [counted(setup, i) for i in range(n)]
        self.shapes = [list(ids.shape) for ids, _ in setup["batches"]]
        self.windows = [list(range(i, min(i + k, n))) for i in range(0, n, k)]
        stepping = [w for w in self.windows if sum(self.counts[i] for i in w)]
        self.steps = [(e, w) for e in range(self.epochs) for w in stepping]

    def describe(self, step):
        """'optimizer step 3 of 4 (micro-batches [6, 7] ...)' in both languages."""
        epoch, window = self.steps[step]
        counts = [self.counts[i] for i in window]
        zh_epoch = f"第 {epoch + 1} 个 epoch 的" if self.epochs > 1 else ""
        en_epoch = f"epoch {epoch + 1}, " if self.epochs > 1 else ""
        zh = (f"第 {step + 1} 次 optimizer.step()（共 {len(self.steps)} 次；{zh_epoch}窗口为第 "
              f"{window} 个 micro-batch（从 0 数），计数的 token 分别有 {counts} 个，共 "
              f"{sum(counts)} 个；accum_steps={self.accum_steps}）")
        en = (f"optimizer step {step + 1} of {len(self.steps)} ({en_epoch}the window of "
              f"micro-batches {window} (from 0), with {counts} counted tokens = "
              f"{sum(counts)}; accum_steps={self.accum_steps})")
        return T(zh, en)

    def overview(self):
        counts = [[self.counts[i] for i in w] for w in self.windows]
        return T(f"{len(self.counts)} 个 micro-batch，形状 {self.shapes}，accum_steps="
                 f"{self.accum_steps}，各窗口计数的 token {counts}",
                 f"{len(self.counts)} micro-batches of shapes {self.shapes}, accum_steps="
                 f"{self.accum_steps}, counted tokens per window {counts}")


# ---------------------------------------------------------------- the grader's own math


def flat(tensors):
    return torch.cat([g.reshape(-1).double() for g in tensors])


def rel_diff(a, b):
    return float((a - b).norm() / max(float(b.norm()), 1e-30))


def model_at(setup, params):
    model = FIXTURE.build_model(setup["model"])
    with torch.no_grad():
        for p, v in zip(model.parameters(), params, strict=True):
            p.copy_(v)
    return model


def summed(setup, params, indices, ignore=None):
    """For each micro-batch: (its summed token loss, the gradient of that sum, flat)."""
    model = model_at(setup, params)
    ignore = ignore_of(setup) if ignore is None else ignore
    out = []
    for i in indices:
        model.zero_grad(set_to_none=False)
        ids, labels = setup["batches"][i]
        logits = model(ids)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                               ignore_index=ignore, reduction="sum")
        loss.backward()
        out.append((float(loss.detach()), flat(p.grad for p in model.parameters())))
    return out


def initial_params(setup):
    return [p.detach().clone() for p in FIXTURE.build_model(setup["model"]).parameters()]


def params_before(setup, exp, step):
    return initial_params(setup) if step == 0 else exp["steps"][step - 1]["params"]


# ---------------------------------------------------------------- hints


MEAN_OF_MEANS = T("这是各 micro-batch 平均损失的平均（transformers 在 2024 年修掉的那个 bug；"
                  "窗口满的时候，平均损失 / accum_steps 就是它）：token 少的 micro-batch "
                  "里每个 token 的权重变大了。应当把整个窗口计数的 token 的损失之和除以窗口里"
                  "计数的 token 总数",
                  "this is the mean of the micro-batches' mean losses (the bug transformers "
                  "fixed in 2024; in a full window, mean loss / accum_steps is exactly that): "
                  "the tokens of sparse micro-batches weigh more. Divide the window's SUMMED "
                  "token loss by the window's total number of counted tokens")
ACCUM_STEPS = T("除以 accum_steps 只有在每个 micro-batch 的计数 token 一样多时才对；"
                "这里它们差别很大，最后一个窗口也可能不满：除以整个窗口计数的 token 总数",
                "dividing by accum_steps is only right when every micro-batch counts the same "
                "number of tokens; here they differ a lot and the last window may be short: "
                "divide by the window's total number of counted tokens")
IGNORED_COUNTED = T("被忽略的位置（label == ignore_index：padding 和 prompt）也被计数了："
                    "只数 labels != ignore_index 的 token",
                    "ignored positions (label == ignore_index: padding and prompt) were "
                    "counted: count only the tokens with labels != ignore_index")
BATCH_WEIGHTED = T("先在每个 micro-batch 内求平均，再按 batch 大小（行数）加权，仍然不对："
                   "行里计数的 token 个数各不相同。按计数的 token 加权，也就是用损失之和除以"
                   "窗口的 token 总数",
                   "averaging inside each micro-batch and then weighting by its batch size (rows) "
                   "is still wrong: rows hold different numbers of counted tokens. Weigh by "
                   "counted tokens: the summed loss divided by the window's token count")
UNNORMALISED = T("梯度应当是窗口平均 token 损失的梯度：除以窗口里计数的 token 总数",
                 "the gradient must be that of the window's MEAN token loss: divide by its "
                 "number of counted tokens")
ZERO_EACH = T("只剩下最后一个 micro-batch 的梯度：zero_grad() 每个窗口调用一次"
              "（在窗口开始时），不是每个 micro-batch 一次",
              "only the last micro-batch's gradient reached the step: call zero_grad() once "
              "per window (at its start), not once per micro-batch")
LEAK = T("上一个窗口的梯度没有清掉，漏进了这一步：每个窗口开始时清空梯度",
         "the previous window's gradient was still there: clear the gradients at the start "
         "of every window")
STALE = T("调用 train_epoch 时参数上已有的梯度漏进了第一步：第一个窗口开始前也要清空梯度",
          "gradients already on the parameters when train_epoch was called leaked into the "
          "first step: clear them before the first window too")
IGNORE_PARAM = T("没有用传进来的 ignore_index（是不是写死了 -100？）："
                 "F.cross_entropy(..., ignore_index=ignore_index)，计数时也用它",
                 "the ignore_index argument was not used (hard-coded -100?): pass it to "
                 "F.cross_entropy(..., ignore_index=ignore_index) and count with it")
NAN_EMPTY = T("梯度里有 NaN：窗口里有一个 micro-batch 一个计数的 token 也没有，它的平均损失是 "
              "0/0 = NaN。用损失之和（reduction=\"sum\"）除以窗口的 token 总数就不会出现",
              "the gradient holds NaN: a micro-batch of this window has no counted token, and "
              "its mean loss is 0/0 = NaN. A summed loss (reduction=\"sum\") divided by the "
              "window's token count never is")
NAN_LOSS = T("损失是 NaN：窗口里有一个 micro-batch 一个计数的 token 也没有，它的平均损失是 "
             "0/0 = NaN（乘以 0 也还是 NaN）。用损失之和除以窗口的 token 总数，或者跳过它",
             "the loss is NaN: a micro-batch of this window has no counted token, and its mean "
             "loss is 0/0 = NaN (times 0 is still NaN). Use the summed loss divided by the "
             "window's token count, or skip that micro-batch")
NONE_GRAD = T("这个参数在 step 时没有梯度（None）："
              "是不是在 backward 之后、step 之前清空了梯度？",
              "this parameter had no gradient (None) at the step: were the gradients cleared "
              "between backward and the step?")
DEFINITION = T("每一步的梯度应当等于窗口里所有计数 token 的平均交叉熵的梯度",
               "each step's gradient must equal that of the mean cross-entropy over all the "
               "counted tokens of the window")
EMPTY_STEPPED = T("一个计数 token 也没有的窗口不能做 step（也不往返回的列表里加东西）",
                  "a window without any counted token must make no step (and add nothing to "
                  "the returned list)")
LOSS_SUM = T("这是窗口的损失之和：除以窗口里计数的 token 数",
             "that is the window's SUM of token losses: divide it by its counted tokens")
LOSS_MEANS = T("这是各 micro-batch 平均损失的平均：token 少的 micro-batch 权重更大。"
               "把窗口的损失之和除以窗口计数的 token 总数",
               "that is the mean of the micro-batches' mean losses, which weighs sparse "
               "micro-batches more: divide the window's summed loss by its counted tokens")
LOSS_DEFINITION = T("返回每个做了 step 的窗口的平均 token 损失：窗口里计数 token 的交叉熵之和"
                    "（step 之前的那些前向）除以它们的个数",
                    "return each stepping window's mean token loss: the sum of the cross-entropy "
                    "over the window's counted tokens (the forward passes before its step) "
                    "divided by their number")


# ---------------------------------------------------------------- diagnosis


def candidates_for(setup, layout, step, exp):
    """(gradient, hint) pairs that known bugs produce for the window of ``step``."""
    indices = layout.steps[step][1]
    parts = summed(setup, params_before(setup, exp, step), indices)
    grads = [g for _, g in parts]
    counts = [layout.counts[i] for i in indices]
    rows = [layout.shapes[i][0] for i in indices]
    numel = [layout.shapes[i][0] * layout.shapes[i][1] for i in indices]
    n, m, k = sum(counts), len(indices), layout.accum_steps
    total = sum(grads)
    means = [g / c if c else g * float("nan") for g, c in zip(grads, counts, strict=True)]
    out = [(sum(means) / m, MEAN_OF_MEANS), (sum(means) / k, ACCUM_STEPS),
           (total / k, ACCUM_STEPS), (total / m, ACCUM_STEPS), (total / sum(numel),
                                                                IGNORED_COUNTED),
           (sum(g / e for g, e in zip(grads, numel, strict=True)) / m, IGNORED_COUNTED),
           (sum(g / e for g, e in zip(grads, numel, strict=True)) / k, IGNORED_COUNTED),
           (sum(mu * r for mu, r in zip(means, rows, strict=True)) / sum(rows), BATCH_WEIGHTED),
           (total, UNNORMALISED)]
    out += [(grads[-1] / d, ZERO_EACH) for d in (n, counts[-1] or 1, k, 1)]
    right = total / n
    if step > 0:
        out.append((right + flat(exp["steps"][step - 1]["grads"]), LEAK))
    if step == 0 and setup.get("stale_grads") is not None:
        model = FIXTURE.build_model(setup["model"])
        out.append((right + flat(FIXTURE.stale_gradients(model, setup["stale_grads"])), STALE))
    if hard_coded_differs(setup):
        hard = summed(setup, params_before(setup, exp, step), indices, ignore=IGNORE)
        out.append((sum(g for _, g in hard) / sum(numel), IGNORE_PARAM))
    return out


def hard_coded_differs(setup):
    """Whether this setup's ignore_index is a real class id, so that code which ignores the
    argument (and uses -100) trains on the ignored positions instead of crashing."""
    return 0 <= (setup.get("ignore_index") or -1) < setup["model"]["vocab"]


def diagnose_step(setup, layout, step, got, exp):
    """A hint naming the likely bug behind a wrong gradient at ``step``."""
    got_grads = got["steps"][step]["grads"]
    if any(not isinstance(g, torch.Tensor) for g in got_grads):
        return NONE_GRAD
    got_vec = flat(got_grads)
    if bool(got_vec.isnan().any()):
        return NAN_EMPTY
    for vec, why in candidates_for(setup, layout, step, exp):
        if not bool(vec.isnan().any()) and rel_diff(got_vec, vec) < 1e-5:
            return why
    if hard_coded_differs(setup):
        return IGNORE_PARAM + T("；或者：", "; or: ") + DEFINITION
    return DEFINITION


def diagnose_loss(setup, layout, step, got_value, exp, exp_value):
    """A hint for a wrong returned loss of the window of ``step``."""
    if got_value != got_value:
        return NAN_LOSS
    indices = layout.steps[step][1]
    counts = [layout.counts[i] for i in indices]
    sums = [s for s, _ in summed(setup, params_before(setup, exp, step), indices)]
    n = sum(counts)
    means = [s / c for s, c in zip(sums, counts, strict=True) if c]
    candidates = [(exp_value * n, LOSS_SUM), (sum(means) / len(indices), LOSS_MEANS),
                  (sum(means) / len(means), LOSS_MEANS),
                  (sum(means) / layout.accum_steps, LOSS_MEANS)]
    for value, why in candidates:
        if abs(got_value - value) <= 1e-6 * max(abs(value), 1e-12):
            return why
    return LOSS_DEFINITION


def step_count_hint(setup, layout, got_count):
    all_windows = len(layout.windows) * layout.epochs
    if got_count == len(layout.counts) * layout.epochs != len(layout.steps):
        return T("每个 micro-batch 之后都调用了 step：应当每个窗口（accum_steps 个 micro-batch）"
                 "一次", "optimizer.step() ran after every micro-batch: it must run once per "
                 "window of accum_steps micro-batches")
    if got_count == all_windows > len(layout.steps):
        # Code that ignores the argument counts the ignored positions (id 0) as targets.
        return EMPTY_STEPPED + (T("；或者：", "; or: ") + IGNORE_PARAM
                                if hard_coded_differs(setup) else T("", ""))
    return T("每个有计数 token 的窗口恰好一次 optimizer.step()",
             "exactly one optimizer.step() per window that has counted tokens")


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
        got, exp = len(self.got["steps"]), len(self.exp["steps"])
        if got != exp:
            self.fail(T(f"optimizer.step() 的次数：期望 {exp}，得到 {got}",
                        f"number of optimizer.step() calls: expected {exp}, got {got}"),
                      step_count_hint(self.setup, self.layout, got))
        for step in range(exp):
            self.step(step)
        self.losses()
        final_tol = scaled(self.tol, self.exp["final"])
        for name, g, e in zip(self.names, self.got["final"], self.exp["final"], strict=False):
            if (problem := compare.tensor_close(g, e, what=name, **final_tol)) is not None:
                self.fail(problem, T("最后一次 step 之后不应再改动参数",
                                     "nothing may change the parameters after the last step"),
                          T("train_epoch 返回后的参数",
                            "the parameters after train_epoch returned"))

    def step(self, step):
        g, e = self.got["steps"][step], self.exp["steps"][step]
        where = self.layout.describe(step)
        grad_tol = scaled(self.tol, e["grads"])
        for name, got, exp in zip(self.names, g["grads"], e["grads"], strict=False):
            if (problem := compare.tensor_close(got, exp, what=f"{name}.grad",
                                                **grad_tol)) is not None:
                why = diagnose_step(self.setup, self.layout, step, self.got, self.exp)
                self.fail(problem, why, where)
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
                          T("返回一个 float 列表，每个做了 step 的窗口一个",
                            "return a list of floats, one per window that stepped"))
            if len(got) != len(exp):
                self.fail(T(f"{what} 返回的列表长度：期望 {len(exp)}，得到 {len(got)}",
                            f"{what} returned a list of length {len(got)}, expected "
                            f"{len(exp)}"),
                          EMPTY_STEPPED if len(got) > len(exp) else LOSS_DEFINITION)
            for i, (g, e) in enumerate(zip(got, exp, strict=True)):
                problem = compare.float_close(g, e, what=f"{what}[{i}]", rtol=LOSS_RTOL,
                                              atol=self.tol["atol"])
                if problem is None:
                    continue
                if isinstance(g, int | float) and not isinstance(g, bool):
                    why = diagnose_loss(self.setup, self.layout, step + i, float(g), self.exp,
                                        e)
                elif isinstance(g, torch.Tensor):
                    why = T("返回 Python float：每个窗口调用一次 .item()",
                            "return Python floats: call .item() once per window")
                else:
                    why = T("返回 Python float", "return Python floats")
                self.fail(problem, why, self.layout.describe(step + i))
            step += len(exp)


def run(t, setup, tol=TIGHT):
    """Run the scenario for the submission and the reference and compare them."""
    got = t.sub.scenario("train", setup)
    exp = t.ref.scenario("train", setup)
    Comparison(t, setup, got, exp, tol).run()
    return got, exp


# ---------------------------------------------------------------- public cases


def statement_example():
    """The statement's example: a bigram model (logits = W[input_ids], W = 0), vocabulary
    4, two micro-batches in one window: A counts 1 token, B counts 3."""
    a_ids = torch.tensor([[1, 2, 0]])
    a_labels = torch.tensor([[IGNORE, 3, IGNORE]])
    b_ids = torch.tensor([[1, 3, 2], [2, 1, 0]])
    b_labels = torch.tensor([[2, 1, 1], [IGNORE, IGNORE, IGNORE]])
    return {"model": {"kind": "bigram", "vocab": 4, "seed": 0},
            "batches": [(a_ids, a_labels), (b_ids, b_labels)], "accum_steps": 2,
            "optimizer": {"name": "sgd", "lr": 1.0}, "ignore_index": None,
            "stale_grads": None, "epochs": 1, "device": "cpu"}


@case(public=True, zh="题面里的例子：bigram 模型，一个窗口里计数的 token 分别是 1 个和 3 个",
      en="the statement's example: a bigram model, one window counting 1 and 3 tokens")
def example_worked(t):
    got, _ = run(t, statement_example())
    table = got["steps"][0]["grads"][0]
    rows = "; ".join(f"W[{i}] {[round(float(v), 4) for v in table[i]]}" for i in (1, 2, 3))
    loss = got["returned"][0][0]
    t.note(f"返回 [{loss:.6f}]（= ln 4）；step 用的梯度 {rows}",
           f"returned [{loss:.6f}] (= ln 4); the step's gradient {rows}")


@case(public=True, zh="计数的 token 差别很大的 micro-batch，最后一个窗口不满",
      en="micro-batches counting very different numbers of tokens, a short last window")
def example_ragged(t):
    run(t, make_setup(t, ["dense", "sparse", "mixed", "sparse", "dense"], 2))


@case(public=True, zh="ignore_index=0（padding 的 id），和一个没有计数 token 的窗口",
      en="ignore_index=0 (the padding id), and a window without counted tokens")
def example_ignore_index_and_empty_window(t):
    run(t, make_setup(t, ["mixed", "dense", "empty", "empty", "sparse", "mixed"], 2,
                      ignore_index=0))


# ---------------------------------------------------------------- hidden cases


@case(zh="每个 micro-batch 计数的 token 数相差很大", en="very different token counts per "
      "micro-batch")
def very_different_counts(t):
    k = t.random.randint(2, 4)
    run(t, make_setup(t, mixed_kinds(t, 2 * k), k))


@case(zh="行数相同、计数的 token 不同的 micro-batch",
      en="micro-batches of equal rows but different token counts")
def equal_rows_different_counts(t):
    k = t.random.randint(2, 3)
    rows = t.random.randint(2, 5)
    shapes = [(rows, t.random.randint(4, 10)) for _ in range(2 * k)]
    run(t, make_setup(t, mixed_kinds(t, 2 * k), k, shapes=shapes))


@case(zh="最后一个窗口不满", en="a short last window")
def short_last_window(t):
    k = t.random.randint(3, 4)
    count = k * t.random.randint(1, 2) + t.random.randint(1, k - 1)
    run(t, make_setup(t, mixed_kinds(t, count), k,
                      optimizer={"name": "sgd", "lr": 0.3, "momentum": 0.9}))


@case(zh="accum_steps = 1：每个 micro-batch 一步", en="accum_steps = 1: a step per micro-batch")
def accum_steps_one(t):
    run(t, make_setup(t, mixed_kinds(t, t.random.randint(3, 5)), 1,
                      optimizer={"name": "adam", "lr": 0.01}))


@case(zh="accum_steps 大于 micro-batch 的个数：只有一个窗口",
      en="accum_steps larger than the number of micro-batches: one window")
def accum_larger_than_loader(t):
    count = t.random.randint(2, 4)
    for k in (count, count + t.random.randint(1, 5)):
        run(t, make_setup(t, mixed_kinds(t, count), k))


@case(zh="ignore_index 是一个合法的 token id", en="an ignore_index that is a valid token id")
def ignore_index_valid_id(t):
    k, vocab = t.random.randint(2, 3), t.random.randint(6, 12)
    run(t, make_setup(t, mixed_kinds(t, 2 * k + 1), k, vocab=vocab,
                      ignore_index=t.random.randrange(1, vocab)))


@case(zh="ignore_index 是负数但不是 -100", en="a negative ignore_index other than -100")
def ignore_index_negative(t):
    k = t.random.randint(2, 3)
    run(t, make_setup(t, mixed_kinds(t, 2 * k), k, ignore_index=-t.random.randint(1, 99)))


@case(zh="窗口里有一个 micro-batch 没有计数的 token",
      en="a micro-batch without counted tokens inside a window")
def empty_microbatch_in_window(t):
    k = t.random.randint(2, 4)
    kinds = mixed_kinds(t, 2 * k)
    kinds[t.random.randrange(k)] = "empty"
    run(t, make_setup(t, kinds, k))


@case(zh="没有计数 token 的窗口：不做 step，不返回损失",
      en="a window without counted tokens: no step, no returned loss")
def empty_window(t):
    k = t.random.randint(2, 3)
    kinds = mixed_kinds(t, 3 * k)
    w = t.random.randrange(3)
    kinds[w * k:(w + 1) * k] = ["empty"] * k
    run(t, make_setup(t, kinds, k, optimizer={"name": "adamw", "lr": 0.01,
                                              "weight_decay": 0.1}))


@case(zh="所有窗口都没有计数的 token：返回 []", en="no window has counted tokens: returns []")
def all_windows_empty(t):
    k = t.random.randint(1, 3)
    run(t, make_setup(t, ["empty"] * t.random.randint(1, 5), k,
                      optimizer={"name": "sgd", "lr": 0.1, "momentum": 0.9},
                      stale_grads=True))


@case(zh="空的 loader：不做 step，返回 []", en="an empty loader: no step, returns []")
def empty_loader(t):
    run(t, make_setup(t, [], t.random.randint(1, 4)))


@case(zh="每一步等于对窗口所有计数 token 的平均交叉熵做一步",
      en="each step equals one step on the window's mean token cross-entropy")
def equals_token_mean(t):
    """Checked against the grader's own computation, not only the reference."""
    k = t.random.randint(2, 4)
    setup = make_setup(t, mixed_kinds(t, 2 * k + 1), k, optimizer={"name": "sgd", "lr": 0.5})
    got, _ = run(t, setup)
    layout = Layout(setup)
    before = initial_params(setup)
    for step, record in enumerate(got["steps"]):
        window = layout.steps[step][1]
        parts = summed(setup, before, window)
        n = sum(layout.counts[i] for i in window)
        grads = sum(g for _, g in parts) / n
        expected = flat(before) - 0.5 * grads
        for what, g, e in (("grad", flat(record["grads"]), grads),
                           ("params", flat(record["params"]), expected)):
            if rel_diff(g, e) > 1e-6:
                t.fail(layout.describe(step) + T(
                    f"：与评测自己算的（窗口平均 token 交叉熵的一步）比较，{what} 的相对误差是 "
                    f"{rel_diff(g, e):.3g}", f": against the judge's own step on the window's "
                    f"mean token cross-entropy, the {what} differ by {rel_diff(g, e):.3g} "
                    f"(relative)") + SEP + DEFINITION)
        before = record["params"]


@case(zh="返回值：每个做了 step 的窗口的平均 token 损失",
      en="returned losses: each stepping window's mean token loss")
def returned_losses(t):
    k = t.random.randint(2, 4)
    run(t, make_setup(t, mixed_kinds(t, 3 * k + 1), k, vocab=t.random.randint(20, 40)))


@case(zh="梯度不会从一个窗口漏到下一个", en="no gradient leaks into the next window")
def no_leak_between_windows(t):
    k = t.random.randint(2, 3)
    run(t, make_setup(t, mixed_kinds(t, 4 * k), k, optimizer={"name": "sgd", "lr": 0.2}))


@case(zh="调用时参数上已有梯度", en="gradients already present when train_epoch is called")
def stale_gradients(t):
    k = t.random.randint(2, 3)
    run(t, make_setup(t, mixed_kinds(t, 2 * k + 1), k, stale_grads=True))


@case(zh="第一个窗口没有计数 token，且调用时已有梯度",
      en="a first window without counted tokens, with gradients present at the call")
def stale_gradients_empty_first_window(t):
    k = t.random.randint(2, 3)
    kinds = ["empty"] * k + mixed_kinds(t, k + 1)
    run(t, make_setup(t, kinds, k, stale_grads=True))


@case(zh="连续两个 epoch", en="two epochs in a row")
def two_epochs(t):
    k = t.random.randint(2, 3)
    run(t, make_setup(t, mixed_kinds(t, 2 * k + 1, empty=1), k, epochs=2,
                      optimizer={"name": "adam", "lr": 0.01}))


@case(zh="SGD momentum、Adam、AdamW", en="SGD with momentum, Adam and AdamW")
def optimizers(t):
    for opt in ({"name": "sgd", "lr": 0.2, "momentum": 0.9, "nesterov": True},
                {"name": "adam", "lr": 0.01}, {"name": "adamw", "lr": 0.01,
                                                "weight_decay": 0.05}):
        k = t.random.randint(2, 3)
        run(t, make_setup(t, mixed_kinds(t, 2 * k + 1), k, optimizer=opt))


@case(zh="一行、一个位置的 micro-batch", en="micro-batches of one row and one position")
def tiny_microbatches(t):
    k = t.random.randint(2, 4)
    count = 3 * k - 1
    shapes = [(1, t.random.randint(1, 2)) for _ in range(count)]
    run(t, make_setup(t, ["dense"] * count, k, shapes=shapes))


@case(zh="更大的词表和更长的序列", en="a larger vocabulary and longer sequences")
def larger(t):
    k = t.random.randint(2, 4)
    shapes = [(t.random.randint(2, 8), t.random.randint(16, 40)) for _ in range(3 * k)]
    run(t, make_setup(t, mixed_kinds(t, 3 * k), k, vocab=t.random.randint(50, 120),
                      shapes=shapes))


@case(zh="在 GPU 上（CUDA）", en="on the GPU (CUDA)", device="cuda")
def on_cuda(t):
    k = t.random.randint(2, 4)
    run(t, make_setup(t, mixed_kinds(t, 3 * k + 1, empty=1), k, device="cuda",
                      optimizer={"name": "adamw", "lr": 0.01}, stale_grads=True))


# ---------------------------------------------------------------- throughput


def epoch_workload(device, *, micro_batches, rows, length, model, accum_steps):
    def make(rng):
        g = torch.Generator().manual_seed(int(torch.randint(0, 2**62, (1,), generator=rng)))
        spec = {"micro_batches": micro_batches, "rows": rows, "length": length,
                "accum_steps": accum_steps,
                "model": {**model, "seed": int(torch.randint(0, 2**31, (1,), generator=g))},
                "data_seed": int(torch.randint(0, 2**31, (1,), generator=g))}
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
    """One epoch of 12 micro-batches (16 to 48 rows of 4 to 20 tokens, prompts and padding
    ignored), accum_steps=4, a small causal LM in float32: a loop over rows instead of
    whole micro-batches is several times too slow."""
    return epoch_workload(device, micro_batches=12, rows=(16, 48), length=(4, 20),
                          model={"vocab": 64, "hidden": 32, "dtype": "float32"},
                          accum_steps=4)
