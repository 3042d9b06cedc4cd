"""Tests for train-step. Public cases first; hidden ones draw fresh inputs per seed.

Every case plans a few calls of train_step (the batches, and what the caller does before
each: evaluate, leave gradients, route around the auxiliary head, poison the loss or a
gradient) and runs fixture.py's ``train`` scenario for the submission and the reference.
Call by call, Comparison checks what came back, the forward and backward counts, the
modules' modes, the order of the calls, the gradients and learning rates the optimizer
step used, the parameters, buffers, optimizer and scheduler state afterwards, against the
reference's; a difference is reported with the call, the parameter and a hint naming the
likely bug.
"""

import math

import torch

from judge import compare
from judge.i18n import T
from judge.testing import case
from judge.training import load_fixture, modes_problem, module_names, order_problem, scaled
from judge.training import tensors_problem as tensors

FIXTURE = load_fixture(__file__)

# float64 everywhere: correct solutions agree to ~1e-15. With clipping, 1e-4: clip_grad_norm_
# scales by max_norm / (norm + 1e-6), and a hand-written clip by max_norm / norm is right too.
TIGHT = {"rtol": 1e-6, "atol": 1e-9}
CLIP = {"rtol": 1e-4, "atol": 1e-7}
SEP = T(" —— ", " — ")


# ---------------------------------------------------------------- inputs


def make_setup(t, count, *, loss="mse", optimizer=None, scheduler=None, dropout=0.0,
               sizes=None, **plans):
    """``count`` planned calls. ``plans`` holds per-call lists (or one value for all):
    aux (bool), eval (bool), stale (bool), poison (None or a kind)."""
    d, h, o = sizes or (t.random.randint(3, 6), t.random.randint(6, 12), t.random.randint(2, 4))
    steps = []
    for i in range(count):
        def plan(key, default, i=i):
            value = plans.get(key, default)
            return value[i] if isinstance(value, list) else value

        n = t.random.randint(4, 10)
        x = torch.randn(n, d, generator=t.rng, dtype=torch.float64)
        y = (torch.randn(n, o, generator=t.rng, dtype=torch.float64) if loss == "mse"
             else torch.randint(0, o, (n,), generator=t.rng))
        steps.append({"x": x, "y": y, "seed": t.random.randrange(2**31),
                      "aux": plan("aux", True), "eval": plan("eval", False),
                      "stale": t.random.randrange(2**31) if plan("stale", False) else None,
                      "poison": plan("poison", None)})
    return {"model": {"sizes": [d, h, o], "dropout": dropout, "seed": t.random.randrange(2**31)},
            "optimizer": optimizer or {"name": "sgd", "lr": 0.1, "momentum": 0.9},
            "scheduler": scheduler, "loss": loss, "max_grad_norm": None, "steps": steps}


def clip_at(t, setup, factor):
    """Set max_grad_norm to ``factor`` times the first step's gradient norm."""
    norm = t.ref.scenario("first_norm", setup)
    setup["max_grad_norm"] = float(f"{factor * norm:.6g}")
    return setup


# ---------------------------------------------------------------- hints

ITEM = T("返回 Python float：loss.item()，范数也要 .item()（clip_grad_norm_ 返回的是张量）",
         "return Python floats: loss.item(), and .item() on the norm too (clip_grad_norm_ "
         "returns a tensor)")
TRAIN_MODE = T("前向之前调用 model.train()：调用方可能刚做完评估，模型还处于 eval 模式"
               "（dropout 关着，BatchNorm 用的是滑动统计量）",
               "call model.train() before the forward: the caller may have just evaluated, "
               "leaving the model in eval mode (dropout off, BatchNorm on running statistics)")
LEFT_TRAINING = T("返回时模型要处于训练模式", "leave the model in training mode")
ONE_FORWARD = T("每次调用恰好一次前向：loss = loss_fn(model(x), y)",
                "exactly one forward per call: loss = loss_fn(model(x), y)")
BACKWARD_ALWAYS = T("损失不是有限值时也要 backward（之后再跳过更新）：数据并行训练中每个进程都必须"
                    "执行 backward，梯度的 all-reduce 就在其中，少一个其他进程就会一直等下去",
                    "run backward even when the loss is not finite (and skip the update "
                    "afterwards): in data-parallel training every rank must run backward, the "
                    "gradient all-reduce happens there, and one rank missing hangs the others")
ONE_BACKWARD = T("每次调用恰好一次 loss.backward()", "exactly one loss.backward() per call")
SKIP_LOSS = T("损失不是有限值（NaN 或 inf）时跳过这次更新：不调用 optimizer.step() 和 "
              "scheduler.step()，把梯度设为 None", "skip the update when the loss is not finite "
              "(NaN or inf): no optimizer.step(), no scheduler.step(), gradients set to None")
SKIP_NORM = T("给了 max_grad_norm 时，梯度范数不是有限值也要跳过这次更新"
              "（clip_grad_norm_ 照样返回这个范数，并把梯度乘上 NaN）",
              "with max_grad_norm, a non-finite gradient norm skips the update too "
              "(clip_grad_norm_ still returns that norm, and multiplies the gradients by NaN)")
ONLY_LOSS = T("没有 max_grad_norm 时只检查损失：损失有限就要做这一步",
              "without max_grad_norm only the loss is checked: a finite loss makes the step")
ONE_STEP = T("每次调用（不跳过时）恰好一次 optimizer.step()",
             "exactly one optimizer.step() per call (unless the step is skipped)")
SCHEDULER_AFTER = T("scheduler.step() 在 optimizer.step() 之后调用，每次调用一次；"
                    "跳过更新时不调用", "call scheduler.step() after optimizer.step(), once "
                    "per call; not at all on a skipped step")
CLEARED_TOO_LATE = T("step 时梯度已经没了：梯度要在 backward 之前清空（zero_grad 放在 backward "
                     "之前），而不是在 backward 和 step 之间",
                     "the gradients were gone at the step: clear them BEFORE backward, not "
                     "between backward and optimizer.step()")
NONE_NOT_ZERO = T("这一步没有用到的参数，梯度应当保持 None（set_to_none=True），而不是填 0："
                  "梯度为 0 时带动量或 weight decay 的优化器照样会移动它",
                  "a parameter this batch does not reach must keep grad None "
                  "(set_to_none=True), not zeros: with zeros, momentum and weight decay still "
                  "move it")
LEAK = T("调用之前留下的梯度漏进了这一步：在 backward 之前清空梯度"
         "（optimizer.zero_grad(set_to_none=True)）", "gradients from before this call leaked "
         "into the step: clear them before backward (optimizer.zero_grad(set_to_none=True))")
CLIP_BEFORE_STEP = T("optimizer.step() 用的是没有裁剪的梯度：裁剪要在 step 之前",
                     "optimizer.step() used unclipped gradients: clip before the step")
NOT_CLIPPED = T("梯度没有按总范数裁剪：在 optimizer.step() 之前调用 "
                "clip_grad_norm_(model.parameters(), max_grad_norm)"
                "（clip_grad_value_ 是逐元素截断，不是一回事）",
                "the gradients were not clipped by their total norm: call "
                "clip_grad_norm_(model.parameters(), max_grad_norm) before optimizer.step() "
                "(clip_grad_value_ clamps elements, which is not the same)")
CLIP_NORM = T("按所有梯度合在一起的总 2-范数裁剪：对 model.parameters() 调用一次 "
              "clip_grad_norm_（不是 clip_grad_value_，也不是逐个参数裁剪）",
              "clip the total 2-norm of all gradients together: one clip_grad_norm_ call on "
              "model.parameters() (not clip_grad_value_, not one parameter at a time)")
NORM_BEFORE = T("返回裁剪之前的总范数（clip_grad_norm_ 的返回值），不是裁剪之后的",
                "return the total norm BEFORE clipping (what clip_grad_norm_ returns), not "
                "after it")
NORM_NONE = T("没有 max_grad_norm 时第二个返回值是 None；有的时候是裁剪前的范数（float）",
              "without max_grad_norm the second value is None; with it, the norm before "
              "clipping (a float)")
GRADS_NONE_AFTER_SKIP = T("跳过更新时把梯度设为 None，不要把非有限的梯度留在参数上",
                          "on a skipped step set the gradients to None: do not leave the "
                          "non-finite gradients on the parameters")
STEP_GRADS = T("step 用的梯度应当是这一批数据的损失的梯度（给了 max_grad_norm 时再裁剪）",
               "the step must use the gradients of this batch's loss (clipped when "
               "max_grad_norm is given)")
OUTSIDE_STEP = T("step 用的梯度是对的，之后的参数却不对：是否在 optimizer.step() 之外改动了参数？",
                 "the step's gradients were right but the parameters after it are not: were "
                 "the parameters changed outside optimizer.step()?")


# ---------------------------------------------------------------- diagnosis


def flat(tensors):
    return torch.cat([g.reshape(-1) for g in tensors if g is not None])


def near(a, b, rtol=1e-4):
    return a.shape == b.shape and float((a - b).norm()) <= rtol * max(float(b.norm()), 1e-12)


def grad_hint(setup, i, got, exp, mismatch):
    """The likely bug behind a wrong gradient at the step of call ``i``."""
    g_grads, e_grads = got[i]["steps"][0]["grads"], exp[i]["steps"][0]["grads"]
    if mismatch.kind == "none":
        value = g_grads[mismatch.index]
        return NONE_NOT_ZERO if not bool(value.any()) else LEAK
    if all(g is None for g in g_grads):
        return CLEARED_TOO_LATE
    if mismatch.kind != "value" or any((g is None) != (e is None)
                                       for g, e in zip(g_grads, e_grads, strict=True)):
        return STEP_GRADS
    got_vec, exp_vec = flat(g_grads), flat(e_grads)
    if not bool(got_vec.any()):
        return CLEARED_TOO_LATE
    clip = setup["max_grad_norm"]
    norm = exp[i]["returned"][1] if clip is not None else None
    if clip is not None and norm > clip:
        unclipped = exp_vec * (norm + 1e-6) / clip
        if near(got_vec, unclipped):
            after = [g for g in got[i]["grads"] if g is not None]
            clipped_later = len(after) == len(g_grads) and near(flat(after), exp_vec)
            return CLIP_BEFORE_STEP if clipped_later else NOT_CLIPPED
        if float(got_vec.norm()) > clip * (1 + 1e-4) or not near(
                got_vec / got_vec.norm(), exp_vec / exp_vec.norm()):
            return CLIP_NORM
    before = previous_grads(setup, i, got)
    if before is not None and clip is None and near(got_vec - exp_vec, before):
        return LEAK
    if before is not None and "zero_grad" not in got[i]["order"]:
        return LEAK + T("（这次调用里没有调用过 zero_grad()）",
                        " (zero_grad() was not called in this call)")
    return STEP_GRADS


def previous_grads(setup, i, got):
    """What .grad held when call ``i`` began, as one vector (None: nothing)."""
    plan = setup["steps"][i]
    if plan["stale"] is not None:
        return flat(FIXTURE.stale_gradients(FIXTURE.build_model(setup["model"]), plan["stale"]))
    if i > 0 and any(g is not None for g in got[i - 1]["grads"]):
        return flat(torch.zeros(0) if g is None else g for g in got[i - 1]["grads"])
    return None


def describe(setup, i):
    """'call 2 of 4 (before it: ...)' in both languages."""
    plan, count = setup["steps"][i], len(setup["steps"])
    zh, en = [], []
    if plan["eval"]:
        zh.append("调用前模型处于 eval 模式")
        en.append("the model was in eval mode before it")
    if plan["stale"] is not None:
        zh.append("调用前每个参数上都留有梯度")
        en.append("gradients were left on every parameter before it")
    if not plan["aux"]:
        zh.append("这一批没有用到辅助头 aux")
        en.append("the auxiliary head aux was not used by this batch")
    poison = {"nan_loss": ("损失是 NaN", "the loss was NaN"),
              "inf_loss": ("损失是 inf", "the loss was inf"),
              "inf_grad": ("fc1.weight 的梯度是 inf（损失有限）",
                           "fc1.weight's gradient was inf (the loss finite)")}.get(plan["poison"])
    if poison:
        zh.append(poison[0])
        en.append(poison[1])
    return T(f"第 {i + 1} 次调用 train_step（共 {count} 次" + ("；" + "；".join(zh) if zh else "")
             + "）", f"call {i + 1} of {count} of train_step"
             + (" (" + "; ".join(en) + ")" if en else ""))


def settings(setup):
    opt = ", ".join(f"{k}={v}" for k, v in setup["optimizer"].items() if k != "name")
    sched = setup["scheduler"]
    return T(f"\n（优化器 {setup['optimizer']['name']}({opt})，max_grad_norm="
             f"{setup['max_grad_norm']}，调度器 {sched and sched['name']}，损失 {setup['loss']}）",
             f"\n(optimizer {setup['optimizer']['name']}({opt}), max_grad_norm="
             f"{setup['max_grad_norm']}, scheduler {sched and sched['name']}, loss "
             f"{setup['loss']})")


# ---------------------------------------------------------------- comparison


def malformed(got, count):
    keys = ("returned", "forwards", "backwards", "order", "steps", "modes", "params",
            "buffers", "grads", "optimizer", "scheduler")
    ok = (isinstance(got, list) and len(got) == count
          and all(isinstance(c, dict) and all(k in c for k in keys)
                  and isinstance(c["steps"], list) and isinstance(c["forwards"], list)
                  and all(isinstance(s, dict) and {"grads", "lr", "params"} <= set(s)
                          for s in c["steps"]) for c in got))
    return None if ok else T("场景的返回结果格式不对（代码是否改动了评测的 fixture？）",
                             "the scenario's result is malformed (did the code tamper with the "
                             "judge's fixture?)")


class Comparison:
    """The submission's calls against the reference's, call by call."""

    def __init__(self, t, setup, got, exp):
        self.t, self.setup, self.got, self.exp = t, setup, got, exp
        model = FIXTURE.build_model(setup["model"])
        self.names = [n for n, _ in model.named_parameters()]
        self.buffer_names = [n for n, _ in model.named_buffers()]
        self.modules = module_names(model)
        self.tol = TIGHT if setup["max_grad_norm"] is None else CLIP
        # The returned loss and norm: exact but for rounding; with clipping, the earlier
        # steps' harmless differences (see CLIP) move later losses a little too.
        self.value_rtol = 1e-9 if setup["max_grad_norm"] is None else 1e-6
        self.i = 0

    def fail(self, problem, why=None):
        message = describe(self.setup, self.i) + T("：", ": ") + problem
        self.t.fail(message + (SEP + why if why is not None else T("", ""))
                    + settings(self.setup))

    def run(self):
        if (problem := malformed(self.got, len(self.setup["steps"]))) is not None:
            self.t.fail(problem)
        for i in range(len(self.setup["steps"])):
            self.i = i
            g, e = self.got[self.i], self.exp[self.i]
            self.returned_types(g["returned"])
            self.counts(g, e)
            self.order(g, e)
            if e["steps"]:
                self.step(g["steps"][0], e["steps"][0])
            self.returned_values(g["returned"], e["returned"])
            self.after(g, e)

    def returned_types(self, got):
        if not isinstance(got, tuple | list) or len(got) != 2:
            self.fail(T(f"应当返回 (loss, norm) 二元组，得到 {compare.show(got)}",
                        f"expected a (loss, norm) tuple, got {compare.show(got)}"))
        for what, value in zip(("loss", "norm"), got, strict=True):
            if isinstance(value, torch.Tensor) or (
                    value is not None and (isinstance(value, bool)
                                           or not isinstance(value, int | float))):
                self.fail(T(f"返回的 {what}：期望 Python float，得到 "
                            f"{compare.describe_type(value, 'zh')}",
                            f"the returned {what}: expected a Python float, got "
                            f"{compare.describe_type(value)}"), ITEM)

    def counts(self, g, e):
        if not g["forwards"] or any(modes_problem(m, [True] * len(self.modules), self.modules)
                                    for m in g["forwards"]):
            first = next((m for m in g["forwards"] if modes_problem(
                m, [True] * len(self.modules), self.modules)), None)
            if first is not None:
                self.fail(T("前向时", "during the forward, ")
                          + modes_problem(first, [True] * len(self.modules), self.modules),
                          TRAIN_MODE)
        if len(g["forwards"]) != len(e["forwards"]):
            self.fail(T(f"前向次数：期望 {len(e['forwards'])}，得到 {len(g['forwards'])}",
                        f"forward passes: expected {len(e['forwards'])}, got "
                        f"{len(g['forwards'])}"), ONE_FORWARD)
        if g["backwards"] != e["backwards"]:
            poisoned = self.setup["steps"][self.i]["poison"] in ("nan_loss", "inf_loss")
            self.fail(T(f"经过损失的 backward 次数：期望 {e['backwards']}，得到 {g['backwards']}",
                        f"backward passes through the loss: expected {e['backwards']}, got "
                        f"{g['backwards']}"),
                      BACKWARD_ALWAYS if poisoned and g["backwards"] == 0 else ONE_BACKWARD)

    def order(self, g, e):
        got_steps, exp_steps = len(g["steps"]), len(e["steps"])
        if got_steps != exp_steps:
            poison = self.setup["steps"][self.i]["poison"]
            why = ONE_STEP
            if exp_steps == 0:
                why = SKIP_LOSS if poison in ("nan_loss", "inf_loss") else SKIP_NORM
            elif got_steps == 0 and poison == "inf_grad":
                why = ONLY_LOSS
            self.fail(T(f"optimizer.step() 的次数：期望 {exp_steps}，得到 {got_steps}",
                        f"optimizer.step() calls: expected {exp_steps}, got {got_steps}"), why)
        calls = [c for c in g["order"] if c != "zero_grad"]
        expected = [c for c in e["order"] if c != "zero_grad"]
        if (problem := order_problem(calls, expected, what=T("调用", "call"))) is not None:
            sched = "scheduler.step" in calls or "scheduler.step" in expected
            self.fail(T("调用顺序不对：", "the calls came in the wrong order: ") + problem,
                      SCHEDULER_AFTER if sched else STEP_GRADS)

    def step(self, g, e):
        if (m := tensors(g["grads"], e["grads"], self.names, suffix=".grad",
                         **scaled(self.tol, e["grads"]))) is not None:
            self.fail(T("optimizer.step() 时 ", "at optimizer.step(), ") + m.message,
                      grad_hint(self.setup, self.i, self.got, self.exp, m))
        for got, exp in zip(g["lr"], e["lr"], strict=False):
            if (problem := compare.float_close(got, exp, what="lr", rtol=1e-12)) is not None:
                self.fail(T("optimizer.step() 时的 ", "at optimizer.step(), the ") + problem,
                          SCHEDULER_AFTER)
        if (m := tensors(g["params"], e["params"], self.names,
                         **scaled(self.tol, e["params"]))) is not None:
            self.fail(T("step 之后的参数 ", "the parameters after the step: ") + m.message,
                      OUTSIDE_STEP)

    def returned_values(self, got, exp):
        loss, norm = got
        if not math.isfinite(exp[0]):
            if math.isfinite(loss):
                self.fail(T(f"返回的 loss：期望非有限值（{exp[0]}），得到 {loss}",
                            f"the returned loss: expected a non-finite value ({exp[0]}), got "
                            f"{loss}"), T("返回这次前向的 loss.item()，即使它不是有限值",
                                          "return this forward's loss.item(), non-finite too"))
        elif (problem := compare.float_close(loss, exp[0], what="loss",
                                             rtol=self.value_rtol)) is not None:
            self.fail(T("返回的 ", "the returned ") + problem,
                      T("返回这一步前向的 loss.item()（更新之前的损失）",
                        "return loss.item() of this step's forward (the loss before the "
                        "update)"))
        if exp[1] is None or norm is None:
            if (exp[1] is None) != (norm is None):
                self.fail(T(f"返回的 norm：期望 {exp[1]}，得到 {norm}",
                            f"the returned norm: expected {exp[1]}, got {norm}"), NORM_NONE)
            return
        clip = self.setup["max_grad_norm"]
        if not math.isfinite(exp[1]):
            if math.isfinite(norm):
                self.fail(T(f"返回的 norm：期望非有限值（{exp[1]}），得到 {norm}",
                            f"the returned norm: expected a non-finite value ({exp[1]}), got "
                            f"{norm}"), NORM_BEFORE)
        elif (problem := compare.float_close(norm, exp[1], what="norm",
                                             rtol=self.value_rtol)) is not None:
            after = exp[1] > clip and abs(norm - clip) <= 1e-4 * clip
            self.fail(T("返回的 ", "the returned ") + problem, NORM_BEFORE if after else
                      T("返回所有梯度合在一起的总 2-范数（裁剪之前）",
                        "return the total 2-norm of all gradients together (before clipping)"))

    def after(self, g, e):
        if (problem := modes_problem(g["modes"], e["modes"], self.modules)) is not None:
            self.fail(T("返回之后 ", "after it returned, ") + problem, LEFT_TRAINING)
        if not e["steps"] and any(grad is not None for grad in g["grads"]):
            name = self.names[next(i for i, grad in enumerate(g["grads"]) if grad is not None)]
            self.fail(T(f"跳过更新之后 {name}.grad 应当是 None",
                        f"after a skipped step {name}.grad must be None"), GRADS_NONE_AFTER_SKIP)
        skipped = T("（这一步应当跳过）", " (this step must be skipped)") if not e["steps"] else \
            T("", "")
        if (m := tensors(g["params"], e["params"], self.names,
                         **scaled(self.tol, e["params"]))) is not None:
            self.fail(T("返回之后的参数 ", "the parameters after it returned: ") + m.message
                      + skipped, SKIP_LOSS if not e["steps"] else OUTSIDE_STEP)
        if (m := tensors(g["buffers"], e["buffers"], self.buffer_names,
                         **scaled(self.tol, e["buffers"]))) is not None:
            self.fail(T("返回之后的缓冲区 ", "the buffers after it returned: ") + m.message,
                      TRAIN_MODE)
        if (problem := compare.value_close(g["optimizer"], e["optimizer"],
                                           what="optimizer.state_dict()['state']",
                                           rtol=self.tol["rtol"], atol=1e-12,
                                           per_tensor_scale=True)) is not None:
            self.fail(problem + skipped, SKIP_LOSS if not e["steps"] else STEP_GRADS)
        if (problem := compare.value_close(g["scheduler"], e["scheduler"], what="scheduler",
                                           rtol=1e-12)) is not None:
            self.fail(problem + skipped, SCHEDULER_AFTER)


def run(t, setup):
    """Run the scenario for the submission and the reference and compare them."""
    got = t.sub.scenario("train", setup)
    exp = t.ref.scenario("train", setup)
    Comparison(t, setup, got, exp).run()
    return got, exp


# ---------------------------------------------------------------- public cases


@case(public=True, zh="基本的三步：SGD + momentum", en="three plain steps: SGD with momentum")
def example_basic(t):
    run(t, make_setup(t, 3, sizes=(3, 6, 2)))


@case(public=True, zh="梯度裁剪和 StepLR", en="gradient clipping and StepLR")
def example_clip_and_scheduler(t):
    setup = make_setup(t, 3, sizes=(4, 8, 2), optimizer={"name": "adam", "lr": 0.01},
                       scheduler={"name": "step", "step_size": 1, "gamma": 0.5})
    run(t, clip_at(t, setup, 0.4))


@case(public=True, zh="第二步的损失是 NaN：跳过更新", en="a NaN loss on step 2: the update skipped")
def example_nan_loss(t):
    setup = make_setup(t, 3, sizes=(3, 6, 2), optimizer={"name": "adamw", "lr": 0.01},
                       scheduler={"name": "step", "step_size": 1, "gamma": 0.5},
                       poison=[None, "nan_loss", None])
    run(t, setup)


# ---------------------------------------------------------------- hidden cases


@case(zh="连续几步：梯度不会一步步累加", en="several steps: gradients do not pile up")
def consecutive_steps(t):
    run(t, make_setup(t, t.random.randint(3, 5)))


@case(zh="调用前参数上已有梯度", en="gradients left on the parameters before each call")
def stale_gradients(t):
    run(t, make_setup(t, 3, stale=[True, False, True],
                      optimizer={"name": "sgd", "lr": 0.05, "momentum": 0.5}))


@case(zh="有一步没用到的分支：梯度保持 None，AdamW 不移动它",
      en="a branch unused by a batch: its grad stays None and AdamW leaves it alone")
def unused_branch_adamw(t):
    run(t, make_setup(t, 4, aux=[True, False, False, True],
                      optimizer={"name": "adamw", "lr": 0.01, "weight_decay": 0.1}))


@case(zh="没用到的分支上留有调用方的梯度", en="an unused branch holding the caller's gradients")
def unused_branch_stale(t):
    run(t, make_setup(t, 3, aux=[True, False, False], stale=[False, True, False],
                      optimizer={"name": "sgd", "lr": 0.05, "momentum": 0.9,
                                 "weight_decay": 0.01}))


@case(zh="梯度裁剪起作用（返回裁剪前的范数）",
      en="clipping that clips (the norm before it returned)")
def clip_active(t):
    setup = make_setup(t, 3, optimizer={"name": "sgd", "lr": 0.1, "momentum": 0.9})
    run(t, clip_at(t, setup, t.random.uniform(0.2, 0.5)))


@case(zh="梯度裁剪不起作用（max_grad_norm 大于范数）",
      en="clipping that does not clip (max_grad_norm above the norm)")
def clip_inactive(t):
    setup = make_setup(t, 3, optimizer={"name": "adam", "lr": 0.01})
    run(t, clip_at(t, setup, 20.0))


@case(zh="裁剪 + Adam + 没用到的分支", en="clipping, Adam and an unused branch")
def clip_with_unused_branch(t):
    setup = make_setup(t, 3, aux=[True, False, True], optimizer={"name": "adam", "lr": 0.01})
    run(t, clip_at(t, setup, 0.3))


@case(zh="StepLR：在 optimizer.step() 之后", en="StepLR, after optimizer.step()")
def scheduler_step_lr(t):
    run(t, make_setup(t, 4, optimizer={"name": "sgd", "lr": 0.2, "momentum": 0.9},
                      scheduler={"name": "step", "step_size": 1, "gamma": 0.5}))


@case(zh="LambdaLR 预热：在 optimizer.step() 之后", en="a LambdaLR warmup, after optimizer.step()")
def scheduler_warmup(t):
    run(t, make_setup(t, 4, optimizer={"name": "adamw", "lr": 0.02},
                      scheduler={"name": "warmup", "warmup": 3}))


@case(zh="损失为 NaN：跳过更新（参数、优化器、调度器都不变，梯度为 None）",
      en="a NaN loss: the update skipped (parameters, optimizer, scheduler unchanged, grads None)")
def nan_loss_skipped(t):
    poison = [None] * 4
    poison[t.random.randint(1, 3)] = "nan_loss"
    run(t, make_setup(t, 4, poison=poison, optimizer={"name": "adamw", "lr": 0.01},
                      scheduler={"name": "step", "step_size": 1, "gamma": 0.7}))


@case(zh="第一步损失就是 inf", en="an infinite loss on the very first step")
def inf_loss_first(t):
    run(t, make_setup(t, 3, poison=["inf_loss", None, None],
                      optimizer={"name": "sgd", "lr": 0.1, "momentum": 0.9},
                      scheduler={"name": "warmup", "warmup": 2}))


@case(zh="带裁剪时损失为 NaN：返回的范数也不是有限值",
      en="a NaN loss with clipping: the returned norm is non-finite too")
def nan_loss_with_clip(t):
    setup = make_setup(t, 3, poison=[None, "nan_loss", None],
                       optimizer={"name": "adam", "lr": 0.01},
                       scheduler={"name": "step", "step_size": 1, "gamma": 0.5})
    run(t, clip_at(t, setup, 0.5))


@case(zh="带裁剪时梯度范数为 inf（损失有限）：跳过更新",
      en="an infinite gradient norm with clipping (finite loss): the update skipped")
def inf_grad_with_clip(t):
    setup = make_setup(t, 4, poison=[None, "inf_grad", None, None],
                       optimizer={"name": "adamw", "lr": 0.01},
                       scheduler={"name": "step", "step_size": 1, "gamma": 0.5})
    run(t, clip_at(t, setup, 0.5))


@case(zh="不裁剪时只检查损失：梯度为 inf 也照常更新",
      en="without clipping only the loss is checked: an infinite gradient still steps")
def inf_grad_without_clip(t):
    run(t, make_setup(t, 2, poison=[None, "inf_grad"], optimizer={"name": "sgd", "lr": 0.1}))


@case(zh="调用前模型处于 eval 模式（dropout 和 BatchNorm）",
      en="the model in eval mode before the call (dropout and BatchNorm)")
def model_was_evaluating(t):
    run(t, make_setup(t, 3, dropout=0.3, eval=[True, False, True]))


@case(zh="dropout：每步一次前向，用同一个随机数流", en="dropout: one forward per step, same RNG")
def dropout_steps(t):
    run(t, make_setup(t, 3, dropout=0.5, optimizer={"name": "adam", "lr": 0.01}))


@case(zh="交叉熵损失", en="a cross-entropy loss")
def cross_entropy(t):
    run(t, make_setup(t, 3, loss="cross_entropy", optimizer={"name": "sgd", "lr": 0.1,
                                                              "nesterov": True,
                                                              "momentum": 0.9}))


@case(zh="所有情况一起", en="everything together")
def everything_together(t):
    count = 6
    poison = [None] * count
    poison[t.random.randint(1, 2)] = t.random.choice(["nan_loss", "inf_loss"])
    poison[t.random.randint(3, 4)] = "inf_grad"
    setup = make_setup(t, count, dropout=0.2, loss=t.random.choice(["mse", "cross_entropy"]),
                       optimizer={"name": "adamw", "lr": 0.01, "weight_decay": 0.05},
                       scheduler={"name": "warmup", "warmup": 3}, poison=poison,
                       aux=[t.random.random() < 0.5 for _ in range(count)],
                       eval=[t.random.random() < 0.5 for _ in range(count)],
                       stale=[t.random.random() < 0.5 for _ in range(count)])
    run(t, clip_at(t, setup, t.random.uniform(0.3, 0.8)))
