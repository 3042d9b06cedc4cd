"""Tests for evaluate. Public cases first; hidden ones draw fresh inputs per seed.

Every case builds a setup here (the model's seed and sizes, the batches, the kind of loader,
each module's mode before the call, the caller's gradients) and runs fixture.py's
``evaluate`` scenario for the submission and the reference. Comparison checks, in this
order: every module was in eval mode during every forward, loss_fn never saw an input that
requires grad, the returned dict and its two values, and that every module's mode, every
parameter, buffer and gradient is afterwards what it was before. A wrong value is
diagnosed by recomputing each batch's loss and accuracy here, in the grader, and matching
the known bugs (a mean of batch means, the last batch alone ...).
"""

import torch
import torch.nn.functional as F

from judge import compare
from judge.i18n import T
from judge.testing import case, workload
from judge.throughput import Workload
from judge.training import load_fixture, modes_problem, module_names
from judge.training import tensors_problem as tensors

FIXTURE = load_fixture(__file__)
LOSS_RTOL = 1e-9  # float64: a sum of weighted means, or one loss over everything, agree
ACCURACY_RTOL = 1e-6  # a count over a count, or a float32 mean of hits (right to ~6e-8)
SEP = T(" —— ", " — ")


# ---------------------------------------------------------------- inputs


def uneven_sizes(t, count, low=1, high=24):
    """``count`` batch sizes, never all the same (a mean of means must show)."""
    sizes = [t.random.randint(low, high) for _ in range(count)]
    if count > 1 and len(set(sizes)) == 1:
        sizes[0] = high if sizes[0] != high else low
    return sizes


def make_setup(t, sizes, *, loader="generator", modes=None, grads=True, dropout=0.3,
               dims=None):
    d, h, c = dims or (t.random.randint(3, 8), t.random.randint(6, 16), t.random.randint(2, 5))
    batches = [(torch.randn(n, d, generator=t.rng, dtype=torch.float64),
                torch.randint(0, c, (n,), generator=t.rng)) for n in sizes]
    return {"model": {"sizes": [d, h, c], "dropout": dropout, "seed": t.random.randrange(2**31)},
            "batches": batches, "loader": loader, "modes": modes,
            "grads": t.random.randrange(2**31) if grads else None,
            "seed": t.random.randrange(2**31)}


def module_count(setup):
    return len(list(FIXTURE.build_model(setup["model"]).modules()))


def label_from_logits(t, setup, right):
    """Relabel every batch so that each prediction is right (or wrong) as ``right(i, j)``
    says for sample j of batch i: the model's eval-mode argmax, or another class."""
    outputs = t.ref.scenario("logits", setup)
    classes = setup["model"]["sizes"][2]
    batches = []
    for i, ((x, _), out) in enumerate(zip(setup["batches"], outputs, strict=True)):
        best = out.argmax(-1)
        y = torch.tensor([int(best[j]) if right(i, j) else (int(best[j]) + 1) % classes
                          for j in range(len(best))], dtype=torch.int64)
        batches.append((x, y))
    setup["batches"] = batches
    return setup


# ---------------------------------------------------------------- hints

EVAL_MODE = T("评估要在 eval 模式下进行：先调用 model.eval()（关掉 dropout，BatchNorm 用并且不更新"
              "它的滑动统计量）", "evaluate in eval mode: call model.eval() first (dropout off; "
              "BatchNorm uses its running statistics and does not update them)")
NO_GRAD = T("评估时不要构建计算图：把前向放在 torch.no_grad() 或 torch.inference_mode() 里",
            "do not build autograd graphs while evaluating: run the forward under "
            "torch.no_grad() or torch.inference_mode()")
RESTORE_EACH = T("model.train() 会把所有子模块都设成训练模式，包括本来冻结在 eval 模式的编码器："
                 "先记下每个模块自己的 training 标志，结束后逐个恢复",
                 "model.train() sets every submodule to training mode, the encoder that was "
                 "frozen in eval mode included: save each module's own training flag before, "
                 "and restore each one afterwards")
RESTORE = T("结束后把每个模块的 training 标志恢复成调用之前的样子（调用方接着还要训练）",
            "afterwards restore every module's training flag to what it was before the call "
            "(the caller goes on training)")
MEAN_OF_MEANS = T("loss_fn 返回的是批次平均值；直接对批次平均值再求平均，"
                  "小批次里的样本权重就变大了：用批次大小加权（loss * len(y)），最后除以样本总数",
                  "loss_fn returns a batch MEAN; averaging the batch means weights the samples "
                  "of small batches more: weigh each by its batch size (loss * len(y)) and "
                  "divide by the number of samples")
LAST_BATCH = T("这只是最后一个批次的值：要在整个数据集上累加",
               "that is the last batch's value alone: accumulate over the whole dataset")
NOT_DIVIDED = T("这是总和：除以样本总数", "that is a total: divide by the number of samples")
ACC_MEANS = T("这是各批次准确率的平均：要数对了的样本总数，再除以样本总数",
              "that is the mean of the batches' accuracies: count the correct samples over "
              "the whole dataset and divide by the number of samples")
DEFINITION = T("\"loss\" 是整个数据集上每个样本损失的平均，\"accuracy\" 是 output.argmax(-1) == y "
               "的样本所占的比例", '"loss" is the mean per-sample loss over the whole dataset, '
               '"accuracy" the fraction of samples whose output.argmax(-1) equals y')
UNTOUCHED = T("评估不能改动参数和梯度：不要调用 zero_grad()、backward() 或优化器",
              "evaluation must not change parameters or gradients: no zero_grad(), no "
              "backward(), no optimizer")
STATS = T("BatchNorm 的滑动统计量被改动了：前向要在 eval 模式下进行",
          "BatchNorm's running statistics changed: run the forward in eval mode")


# ---------------------------------------------------------------- diagnosis


def per_batch(t, setup):
    """Each batch's mean loss, size and number of correct predictions, recomputed here
    from the model's eval-mode outputs."""
    outputs = t.ref.scenario("logits", setup)
    rows = []
    for (_, y), out in zip(setup["batches"], outputs, strict=True):
        rows.append((float(F.cross_entropy(out, y)), len(y), int((out.argmax(-1) == y).sum())))
    return rows


def loss_hint(t, setup, got):
    rows = per_batch(t, setup)
    n = sum(size for _, size, _ in rows)
    candidates = [(sum(loss for loss, _, _ in rows) / len(rows), MEAN_OF_MEANS),
                  (rows[-1][0], LAST_BATCH),
                  (sum(loss * size for loss, size, _ in rows), NOT_DIVIDED),
                  (sum(loss for loss, _, _ in rows), NOT_DIVIDED)]
    return match(got, candidates, n)


def accuracy_hint(t, setup, got):
    rows = per_batch(t, setup)
    n = sum(size for _, size, _ in rows)
    candidates = [(sum(c / size for _, size, c in rows) / len(rows), ACC_MEANS),
                  (rows[-1][2] / rows[-1][1], LAST_BATCH),
                  (float(sum(c for _, _, c in rows)), NOT_DIVIDED)]
    return match(got, candidates, n)


def match(got, candidates, n):
    for value, why in candidates:
        if abs(got - value) <= 1e-6 * max(abs(value), 1e-12):
            return why
    return DEFINITION


def modes_hint(got, exp):
    if all(got) and not all(exp):
        return RESTORE_EACH
    return RESTORE


# ---------------------------------------------------------------- comparison


def malformed(got):
    keys = ("returned", "forwards", "loss_calls", "modes", "params", "buffers", "grads")
    ok = (isinstance(got, dict) and all(k in got for k in keys)
          and isinstance(got["forwards"], list) and isinstance(got["loss_calls"], list)
          and all(isinstance(c, dict) and isinstance(c.get("requires_grad"), bool)
                  for c in got["loss_calls"]))
    return None if ok else T("场景的返回结果格式不对（代码是否改动了评测的 fixture？）",
                             "the scenario's result is malformed (did the code tamper with the "
                             "judge's fixture?)")


class Comparison:
    def __init__(self, t, setup, got, exp):
        self.t, self.setup, self.got, self.exp = t, setup, got, exp
        model = FIXTURE.build_model(setup["model"])
        self.modules = module_names(model)
        self.names = [n for n, _ in model.named_parameters()]
        self.buffer_names = [n for n, _ in model.named_buffers()]
        sizes = [len(y) for _, y in setup["batches"]]
        self.context = T(f"\n（{len(sizes)} 个批次，大小 {sizes}，loader 是 {setup['loader']}）",
                         f"\n({len(sizes)} batches of sizes {sizes}, the loader a "
                         f"{setup['loader']})")

    def fail(self, problem, why=None):
        self.t.fail(problem + (SEP + why if why is not None else T("", "")) + self.context)

    def run(self):
        if (problem := malformed(self.got)) is not None:
            self.t.fail(problem)
        g, e = self.got, self.exp
        eval_modes = [False] * len(self.modules)
        for i, modes in enumerate(g["forwards"]):
            if (problem := modes_problem(modes, eval_modes, self.modules)) is not None:
                self.fail(T(f"第 {i + 1} 次前向时 ", f"during forward {i + 1}, ") + problem,
                          EVAL_MODE)
        for i, call in enumerate(g["loss_calls"]):
            if call["requires_grad"]:
                self.fail(T(f"第 {i + 1} 次调用 loss_fn 时，它的输入 requires_grad=True"
                            "（正在构建计算图）", f"loss_fn call {i + 1}: its input had "
                            "requires_grad=True (an autograd graph was being built)"), NO_GRAD)
        self.returned(g["returned"], e["returned"])
        if (problem := modes_problem(g["modes"], e["modes"], self.modules)) is not None:
            self.fail(T("evaluate 返回之后 ", "after evaluate returned, ") + problem,
                      modes_hint(g["modes"], e["modes"]))
        self.unchanged()

    def returned(self, got, exp):
        if (problem := compare.keys_equal(got, exp, what="evaluate(...)")) is not None:
            self.fail(problem)
        for key in ("loss", "accuracy"):
            value = got[key]
            if isinstance(value, torch.Tensor | bool) or not isinstance(value, int | float):
                self.fail(compare.is_type(value, float, what=f"evaluate(...)[{key!r}]"),
                          T("返回 Python float（.item()）", "return Python floats (.item())"))
        if (problem := compare.float_close(got["loss"], exp["loss"], what="evaluate(...)['loss']",
                                           rtol=LOSS_RTOL)) is not None:
            self.fail(problem, loss_hint(self.t, self.setup, float(got["loss"])))
        if (problem := compare.float_close(got["accuracy"], exp["accuracy"],
                                           what="evaluate(...)['accuracy']",
                                           rtol=ACCURACY_RTOL)) is not None:
            self.fail(problem, accuracy_hint(self.t, self.setup, float(got["accuracy"])))

    def unchanged(self):
        g, e = self.got, self.exp
        after = T("evaluate 返回之后 ", "after evaluate returned, ")
        tight = {"rtol": 0.0, "atol": 0.0}
        if (m := tensors(g["params"], e["params"], self.names, **tight)) is not None:
            self.fail(after + m.message, UNTOUCHED)
        if (m := tensors(g["buffers"], e["buffers"], self.buffer_names, **tight)) is not None:
            self.fail(after + m.message, STATS)
        if (m := tensors(g["grads"], e["grads"], self.names, suffix=".grad", **tight)) is not None:
            self.fail(after + m.message, UNTOUCHED)


def run(t, setup):
    got = t.sub.scenario("evaluate", setup)
    exp = t.ref.scenario("evaluate", setup)
    Comparison(t, setup, got, exp).run()
    return got, exp


def expect_empty_raises(t, loader):
    setup = make_setup(t, [], loader=loader)
    t.expect_raises("ValueError", lambda: t.sub.scenario("evaluate", setup),
                    f"evaluate(model, <an empty {loader}>, loss_fn)",
                    hint=T("没有样本时平均值没有定义：抛出 ValueError",
                           "with no samples the mean is undefined: raise ValueError"))


# ---------------------------------------------------------------- public cases


@case(public=True, zh="大小不一的批次，编码器冻结在 eval 模式",
      en="batches of different sizes, the encoder frozen in eval mode")
def example_uneven_batches(t):
    run(t, make_setup(t, [6, 2, 3], dims=(4, 8, 3)))


@case(public=True, zh="DataLoader，调用方留下的梯度", en="a DataLoader and the caller's gradients")
def example_dataloader(t):
    run(t, make_setup(t, [4, 7, 2, 5], loader="dataloader", dims=(3, 6, 2)))


@case(public=True, zh="空的 loader：ValueError", en="an empty loader: ValueError")
def example_empty(t):
    expect_empty_raises(t, "generator")


# ---------------------------------------------------------------- hidden cases


@case(zh="每个样本权重相同（批次大小差别很大）",
      en="every sample weighs the same (very uneven batches)")
def uneven_batches(t):
    sizes = uneven_sizes(t, t.random.randint(4, 8), 1, 6)
    sizes[t.random.randrange(len(sizes))] = t.random.randint(30, 60)
    run(t, make_setup(t, sizes))


@case(zh="很多小批次", en="many small batches")
def many_batches(t):
    run(t, make_setup(t, uneven_sizes(t, t.random.randint(20, 40), 1, 8)))


@case(zh="只有一个批次", en="a single batch")
def single_batch(t):
    run(t, make_setup(t, [t.random.randint(2, 30)]))


@case(zh="每个批次只有一个样本", en="batches of one sample")
def batches_of_one(t):
    run(t, make_setup(t, [1] * t.random.randint(3, 9)))


@case(zh="eval 模式：dropout 关闭，BatchNorm 不更新统计量",
      en="eval mode: dropout off, BatchNorm statistics untouched")
def eval_mode(t):
    run(t, make_setup(t, uneven_sizes(t, 4, 2, 12), dropout=0.5))


@case(zh="冻结的编码器恢复后仍是 eval 模式",
      en="the frozen encoder is back in eval mode afterwards")
def frozen_encoder_restored(t):
    run(t, make_setup(t, uneven_sizes(t, 3, 2, 10)))


@case(zh="调用前整个模型在 eval 模式：之后也是", en="a model all in eval mode stays so")
def all_eval_before(t):
    setup = make_setup(t, uneven_sizes(t, 3, 2, 10))
    setup["modes"] = [False] * module_count(setup)
    run(t, setup)


@case(zh="调用前整个模型在训练模式：之后也是", en="a model all in training mode stays so")
def all_train_before(t):
    setup = make_setup(t, uneven_sizes(t, 3, 2, 10))
    setup["modes"] = [True] * module_count(setup)
    run(t, setup)


@case(zh="各模块模式随机：逐个恢复", en="random modes per module: each one restored")
def mixed_modes(t):
    setup = make_setup(t, uneven_sizes(t, 3, 2, 10))
    count = module_count(setup)
    modes = [t.random.random() < 0.5 for _ in range(count)]
    modes[0] = not modes[1]  # the top module's flag differs from a child's
    setup["modes"] = modes
    run(t, setup)


@case(zh="不构建计算图（no_grad 或 inference_mode）",
      en="no autograd graph (no_grad or inference_mode)")
def no_autograd(t):
    run(t, make_setup(t, uneven_sizes(t, 5, 1, 12), loader="list"))


@case(zh="参数、缓冲区和梯度都不变", en="parameters, buffers and gradients unchanged")
def state_unchanged(t):
    run(t, make_setup(t, uneven_sizes(t, 4, 2, 12), loader="dataloader"))


@case(zh="没有梯度时保持 None", en="no gradients stay None")
def no_gradients_stay_none(t):
    run(t, make_setup(t, uneven_sizes(t, 3, 2, 12), grads=False))


@case(zh="准确率按整个数据集算（最后一批全对）",
      en="accuracy over the whole dataset (the last batch all right)")
def accuracy_all_batches(t):
    setup = make_setup(t, uneven_sizes(t, 4, 3, 12))
    last = len(setup["batches"]) - 1
    run(t, label_from_logits(t, setup, lambda i, j: i == last or (i + j) % 3 == 0))


@case(zh="准确率恰好为 1 和恰好为 0", en="accuracy exactly 1 and exactly 0")
def accuracy_extremes(t):
    for right in (True, False):
        setup = make_setup(t, uneven_sizes(t, 3, 1, 10))
        run(t, label_from_logits(t, setup, lambda i, j, right=right: right))


@case(zh="list 和 DataLoader 作为 loader", en="a list and a DataLoader as the loader")
def other_loaders(t):
    for loader in ("list", "dataloader"):
        run(t, make_setup(t, uneven_sizes(t, 4, 1, 12), loader=loader))


@case(zh="空的 loader（list、DataLoader）：ValueError",
      en="an empty loader (a list, a DataLoader): ValueError")
def empty_loaders(t):
    for loader in ("list", "dataloader"):
        expect_empty_raises(t, loader)


# ---------------------------------------------------------------- throughput


@workload
def many_small_batches(device):
    """One pass over 200 batches of 16 to 64 samples through a small float32 model: the
    forward costs a few hundred microseconds per batch, so per-sample Python work shows."""

    def make(rng):
        g = torch.Generator().manual_seed(int(torch.randint(0, 2**62, (1,), generator=rng)))
        spec = {"model": {"sizes": [32, 64, 10], "dropout": 0.2, "dtype": "float32",
                          "seed": int(torch.randint(0, 2**31, (1,), generator=g))},
                "data_seed": int(torch.randint(0, 2**31, (1,), generator=g)),
                "batch_sizes": torch.randint(16, 65, (200,), generator=g).tolist()}
        return [spec], {}

    def check(got, exp):
        if (problem := compare.keys_equal(got, exp, what="evaluate(...)")) is not None:
            return problem
        # float32 sums over 10,000 samples drift by ~1e-6: the check is against skipped
        # work, not for precision (the correctness cases are float64).
        return (compare.float_close(got["loss"], exp["loss"], what="evaluate(...)['loss']",
                                    rtol=1e-4)
                or compare.float_close(got["accuracy"], exp["accuracy"],
                                       what="evaluate(...)['accuracy']", rtol=1e-6) or True)

    return Workload(fn="timed_pass", target="fixture", prepare="prepare_pass", make=make,
                    check=check)
