"""Tests for amp-step. Public cases first; hidden ones draw fresh inputs per seed.

Every case builds a setup (a model spec, a list of steps with their batches and, on some
steps, a non-finite value to inject into a gradient, the optimizer, scheduler and scaler
settings) here in the grader and runs fixture.py's ``train`` scenario for the submission
and for the reference. After every call of amp_train_step the scenario records what it
returned, the parameters, the optimizer's state, the scaler's scale and growth tracker,
the learning rates, the training flags, the autocast state the forward and the loss ran
under, the calls made on the scaler / optimizer / scheduler, and the gradients the
optimizer step used. Comparison checks them step by step against the reference's, the
contract's calls first (scaler.step, never optimizer.step directly; one scaler.update();
scheduler.step only after a taken step), then autocast, then the numbers, so that the
first message names the cause rather than a consequence.

CPU cases run in bfloat16 with torch.amp.GradScaler("cpu"), which torch has since 2.3; on
an older torch they are skipped. CUDA cases (float16) run on GPU workers only.
"""

import math

import torch

from judge import compare
from judge.i18n import T
from judge.testing import case
from judge.training import load_fixture, scaled, tensors_problem

# fixture.py, imported here (the grader's own copy), to build the same model.
FIXTURE = load_fixture(__file__)
CPU_SCALER = FIXTURE.cpu_scaler_supported()
# Both runners compute the same operations in the same order, so they agree bit for bit;
# the room is for correct variants (a hand-written clip, foreach or not) whose last-bit
# differences a bfloat16 forward can round the other way. The bugs are off by far more
# (a factor of the scale, a skipped or extra step, NaN).
TOL = {"rtol": 2e-3, "atol": 1e-7}
SEP = T(" —— ", " — ")


# ---------------------------------------------------------------- inputs


def randn(t, *shape):
    """A float32 tensor drawn with t.random (Python's RNG: the same on every machine)."""
    flat = [t.random.gauss(0.0, 1.0) for _ in range(math.prod(shape))]
    return torch.tensor(flat, dtype=torch.float32).reshape(shape)


def make_setup(t, count, *, loss="mse", optimizer=None, scheduler=None, scaler=None,
               max_grad_norm=None, poison=None, device="cpu", dtype="bfloat16", spare=False,
               stale_grads=False, defaults=False):
    """A setup for fixture.train: a random MLP, ``count`` steps of random batches, and
    ``poison``: {step index: {"value": "inf" | "nan" | "-inf", "param": index or None}}."""
    d, h = t.random.randint(3, 8), t.random.randint(8, 16)
    o = t.random.randint(2, 5) if loss == "cross_entropy" else t.random.randint(1, 3)
    steps = []
    for i in range(count):
        b = t.random.randint(2, 8)
        y = (torch.tensor([t.random.randrange(o) for _ in range(b)]) if loss == "cross_entropy"
             else randn(t, b, o))
        steps.append({"x": randn(t, b, d), "y": y, "poison": (poison or {}).get(i)})
    scaler = {"init_scale": 2.0**10, "growth_interval": 3, **(scaler or {})}
    return {"model": {"kind": "mlp", "sizes": [d, h, o], "seed": t.random.randrange(2**31),
                      "spare": spare},
            "steps": steps, "loss": loss,
            "optimizer": optimizer or {"name": "sgd", "lr": 0.05, "momentum": 0.9},
            "scheduler": scheduler, "scaler": scaler, "max_grad_norm": max_grad_norm,
            "device": device, "dtype": dtype,
            "stale_grads": t.random.randrange(2**31) if stale_grads else None,
            "defaults": defaults}


def poisons(t, count, how_many, *, params=True):
    """Non-finite injections on ``how_many`` random steps (never the first two)."""
    chosen = t.random.sample(range(2, count), how_many)
    n_params = 8  # fc1, fc2, norm, out: a weight and a bias each
    return {i: {"value": t.random.choice(["inf", "nan", "-inf"]),
                "param": t.random.randrange(n_params) if params and t.random.random() < 0.6
                else None, "index": t.random.randrange(1000)} for i in chosen}


def grad_norm(setup):
    """The total gradient norm at the initial parameters on the first batch, in float32
    without autocast: a scale for choosing max_grad_norm."""
    model = FIXTURE.build_model(setup["model"])
    step = setup["steps"][0]
    FIXTURE.LossFn(setup["loss"], "cpu")(model(step["x"]), step["y"]).backward()
    return float(torch.cat([p.grad.reshape(-1) for p in model.parameters()
                            if p.grad is not None]).norm())


def sig(value):
    return float(f"{value:.4g}")


# ---------------------------------------------------------------- hints


OPTIMIZER_DIRECT = T("调用了 optimizer.step()：要用 scaler.step(optimizer)。它会先检查（并在需要时"
                     "反缩放）梯度，梯度里有 inf 或 NaN 时跳过这一步；直接调用 optimizer.step() "
                     "会在 inf 上更新参数",
                     "optimizer.step() was called directly: call scaler.step(optimizer). It "
                     "checks (and, if needed, unscales) the gradients and skips the step when "
                     "they hold inf or NaN; optimizer.step() steps on them")
NO_SCALER_STEP = T("没有调用 scaler.step(optimizer)", "scaler.step(optimizer) was not called")
UPDATE = T("每次 scaler.step(optimizer) 之后调用一次 scaler.update()：它在跳过的一步之后降低 "
           "scale，在 growth_interval 个正常的步之后提高 scale",
           "call scaler.update() once after each scaler.step(optimizer): it lowers the scale "
           "after a skipped step and raises it after growth_interval clean steps")
SCHEDULER_SKIPPED = T("scaler 跳过了这一步（梯度里有 inf/NaN，scale 降低了），优化器没有更新："
                      "这时不能调用 scheduler.step()。比较 update() 前后的 scaler.get_scale()，"
                      "只在 scale 没有降低时调用",
                      "the scaler skipped this step (inf/NaN in the gradients, the scale went "
                      "down) and the optimizer did not move: scheduler.step() must not be "
                      "called. Compare scaler.get_scale() before and after update() and call it "
                      "only when the scale did not go down")
SCHEDULER_MISSING = T("这一步真的更新了：之后调用一次 scheduler.step()",
                      "this step was taken: call scheduler.step() once after it")
NO_AUTOCAST = T("前向和损失要在 torch.autocast(device_type=device_type, dtype=dtype) 里计算",
                "run the forward and the loss under torch.autocast(device_type=device_type, "
                "dtype=dtype)")
LOSS_AUTOCAST = T("损失也要在 autocast 里计算：把 loss_fn(model(x), y) 整个放进 with 块",
                  "compute the loss under autocast too: put loss_fn(model(x), y) inside the "
                  "with block")
CLIP_SCALED = T("裁剪的是还乘着 scale 的梯度：它们的范数大了 scale 倍，裁剪之后再反缩放就太小了。"
                "先 scaler.unscale_(optimizer)，再 clip_grad_norm_",
                "the clip saw gradients still multiplied by the scale: their norm is scale "
                "times too large, so after clipping and unscaling they are far too small. Call "
                "scaler.unscale_(optimizer) first, then clip_grad_norm_")
NOT_CLIPPED = T("梯度没有裁剪到 max_grad_norm：scaler.unscale_(optimizer) 之后调用 "
                "clip_grad_norm_(model.parameters(), max_grad_norm)",
                "the gradients were not clipped to max_grad_norm: call "
                "clip_grad_norm_(model.parameters(), max_grad_norm) after "
                "scaler.unscale_(optimizer)")
ZEROS_AT_STEP = T("step 时梯度全是 0（或 None）：是不是在 backward 之后、step 之前清空了梯度？"
                  "在 backward 之前清空", "the gradients were all zero (or None) at the step: "
                  "were they cleared between backward and the step? Clear them before the "
                  "backward")
LEAK = T("梯度里还有之前留下的东西：在 backward 之前用 zero_grad(set_to_none=True) 清空梯度",
         "the gradients still held something from before: clear them with "
         "zero_grad(set_to_none=True) before the backward")
SET_TO_NONE = T("这个参数这一步没有梯度（前向没有用到它），它的 .grad 应当是 None："
                "zero_grad(set_to_none=True)；填成 0 会让 AdamW 的 weight decay 和动量去移动它",
                "this parameter gets no gradient in this step (the forward does not use it) "
                "and its .grad must stay None: zero_grad(set_to_none=True); zeros let AdamW's "
                "weight decay and momentum move it")
STEPPED_ON_INF = T("梯度里有 inf/NaN 的一步被执行了：参数变成了 inf/NaN。"
                   "用 scaler.step(optimizer)，它会跳过这样的一步",
                   "a step with inf/NaN gradients was taken and the parameters became "
                   "inf/NaN: scaler.step(optimizer) skips such a step")
STILL_SCALED = T("step 用的梯度还乘着 scale：scaler.step(optimizer) 会先反缩放，"
                 "不要自己调用 optimizer.step()",
                 "the step used gradients still multiplied by the scale: scaler.step(optimizer) "
                 "unscales them first; do not call optimizer.step() yourself")
TAKEN = T("taken 表示优化器是否真的更新了：scaler 跳过的一步（scale 降低了）是 False，其余是 True；"
          "scaler 被禁用（enabled=False）时总是 True",
          "taken says whether the optimizer really stepped: False for a step the scaler "
          "skipped (the scale went down), True otherwise, and always True with a disabled "
          "scaler")
LOSS_VALUE = T("返回 loss.item()：autocast 下算出的、没有乘以 scale 的损失",
               "return loss.item(): the loss computed under autocast, not multiplied by the "
               "scale")
TRAINING = T("调用之后模型要处于训练模式（不要调用 model.eval()）",
             "leave the model in training mode (do not call model.eval())")
ERRORS = [
    ("step() has already been called since the last update()",
     T("上一步之后没有调用 scaler.update()：每次 scaler.step(optimizer) 之后调用一次",
       "scaler.update() was not called after the previous step: call it once after each "
       "scaler.step(optimizer)")),
    ("No inf checks were recorded for this optimizer",
     T("scaler.step 时没有任何梯度：是不是在 backward 之后、step 之前清空了梯度"
       "（zero_grad 要放在 backward 之前）？",
       "there were no gradients at scaler.step: were they cleared between backward and the "
       "step (zero_grad belongs before the backward)?")),
    ("No inf checks were recorded prior to update",
     T("scaler.update() 之前没有调用 scaler.step(optimizer)（或 unscale_）："
       "用 scaler.step(optimizer) 代替 optimizer.step()",
       "scaler.update() came without scaler.step(optimizer) (or unscale_) before it: call "
       "scaler.step(optimizer) instead of optimizer.step()")),
    ("unscale_() has already been called on this optimizer since the last update()",
     T("每一步只调用一次 scaler.unscale_(optimizer)，在裁剪之前",
       "call scaler.unscale_(optimizer) once per step, before clipping")),
]


def explain(error):
    """A hint for the errors GradScaler raises when it is used out of order."""
    for words, hint in ERRORS:
        if words in error.message:
            return hint
    return None


# ---------------------------------------------------------------- comparison


def flat(tensors):
    return torch.cat([g.reshape(-1).double() for g in tensors if g is not None])


def unpack(returned):
    """(loss, taken) from what came back, or a message saying why it is not a pair."""
    if isinstance(returned, dict) and returned.get("sequence") in ("tuple", "list") and len(
            returned["items"]) == 2:
        return returned["items"], None
    shown = (returned.get("repr") or returned.get("sequence")) if isinstance(returned, dict) \
        else compare.describe_type(returned)
    return None, T(f"amp_train_step 应当返回 (loss, taken)，得到 {shown}",
                   f"amp_train_step must return (loss, taken), got {shown}")


class Comparison:
    def __init__(self, t, setup, got, exp):
        self.t, self.setup, self.got, self.exp = t, setup, got, exp
        self.names = [n for n, _ in FIXTURE.build_model(setup["model"]).named_parameters()]

    def where(self, i):
        """'call 3 of 8 of amp_train_step (scale 2048.0 before it; inf in ...)'."""
        poison = self.setup["steps"][i].get("poison")
        scale = None
        if self.setup["scaler"].get("enabled", True):
            scale = self.exp[i - 1]["scaler"].get("scale") if i else self.setup["scaler"][
                "init_scale"]
        zh = en = ""
        if poison is not None:
            target = "model output" if poison.get("param") is None else self.names[
                poison["param"]]
            zh = f"；这一步往 {target} 的梯度里注入了 {poison['value']}"
            en = f"; {poison['value']} injected into the gradient of {target}"
        return T(f"第 {i + 1} 次调用 amp_train_step（共 {len(self.exp)} 次；调用前 scale={scale}"
                 f"{zh}）：",
                 f"call {i + 1} of {len(self.exp)} of amp_train_step (scale {scale} before it"
                 f"{en}): ")

    def fail(self, i, problem, why=None):
        self.t.fail(self.where(i) + problem + (SEP + why if why is not None else T("", "")))

    def run(self):
        if not isinstance(self.got, list) or len(self.got) != len(self.exp) or not all(
                isinstance(r, dict) for r in self.got):
            self.t.fail(T("场景的返回结果格式不对（代码是否改动了评测的 fixture？）",
                          "the scenario's result is malformed (did the code tamper with the "
                          "judge's fixture?)"))
        for i in range(len(self.exp)):
            self.calls(i)
            self.autocast(i)
            self.returned(i)
            self.numbers(i)

    def calls(self, i):
        calls = self.got[i]["calls"]
        # The scheduler must follow the submission's own answer (a wrong answer about the
        # step is reported as such below); the reference's where that is not a bool.
        got, _ = unpack(self.got[i]["returned"])
        taken = got[1] if got is not None and isinstance(got[1], bool) else unpack(
            self.exp[i]["returned"])[0][1]
        if "optimizer.step" in calls:
            self.fail(i, T("直接调用了 optimizer.step()", "optimizer.step() was called directly"),
                      OPTIMIZER_DIRECT)
        if "scaler.step" not in calls:
            self.fail(i, NO_SCALER_STEP, OPTIMIZER_DIRECT)
        updates = calls.count("scaler.update")
        if updates != 1:
            self.fail(i, T(f"scaler.update() 调用了 {updates} 次，应当 1 次",
                           f"scaler.update() was called {updates} time(s), expected once"),
                      UPDATE)
        if self.setup.get("scheduler") is not None:
            count = calls.count("scheduler.step")
            if count != int(taken):
                self.fail(i, T(f"scheduler.step() 调用了 {count} 次，应当 {int(taken)} 次",
                               f"scheduler.step() was called {count} time(s), expected "
                               f"{int(taken)}"), SCHEDULER_SKIPPED if not taken
                          else SCHEDULER_MISSING)

    def autocast(self, i):
        want = {"enabled": True, "dtype": self.setup.get("dtype", "bfloat16")}
        device = "cuda" if self.setup.get("device", "cpu").startswith("cuda") else "cpu"
        for what, seen, hint in (("model(x)", self.got[i]["forward"], NO_AUTOCAST),
                                 ("loss_fn(...)", self.got[i]["loss_fn"], LOSS_AUTOCAST)):
            if not seen:
                self.fail(i, T(f"没有调用 {what}", f"{what} was not called"))
            for state in seen:
                if not state.get("enabled"):
                    self.fail(i, T(f"{what} 运行时 {device} 的 autocast 没有打开",
                                   f"{what} ran with {device} autocast off"), hint)
                if state.get("dtype") != want["dtype"]:
                    self.fail(i, T(f"{what} 运行时 autocast 的 dtype 是 {state.get('dtype')}，"
                                   f"期望 {want['dtype']}",
                                   f"{what} ran under autocast with dtype {state.get('dtype')}, "
                                   f"expected {want['dtype']}"),
                              T("用传进来的 device_type 和 dtype：torch.autocast(device_type="
                                "device_type, dtype=dtype)",
                                "use the device_type and dtype you are given: torch.autocast("
                                "device_type=device_type, dtype=dtype)"))

    def returned(self, i):
        got, problem = unpack(self.got[i]["returned"])
        if problem is not None:
            self.fail(i, problem)
        (loss, taken), (exp_loss, exp_taken) = got, unpack(self.exp[i]["returned"])[0]
        if not isinstance(taken, bool):
            self.fail(i, compare.is_type(taken, bool, what="taken"),
                      T("taken 是 Python 的 True / False", "taken is a Python bool"))
        if taken != exp_taken:
            self.fail(i, T(f"返回的 taken 是 {taken}，期望 {exp_taken}",
                           f"returned taken={taken}, expected {exp_taken}"), self.why_taken(i))
        if (problem := compare.float_close(loss, exp_loss, what="loss", rtol=TOL["rtol"],
                                           atol=1e-6)) is not None:
            scale = self.exp[i]["scaler"].get("scale")
            hint = LOSS_VALUE
            if isinstance(loss, float) and scale and math.isclose(loss, exp_loss * scale,
                                                                  rel_tol=1e-2):
                hint = T("这是乘以 scale 之后的损失：返回 loss.item()，不是 scaler.scale(loss)",
                         "that is the scaled loss: return loss.item(), not scaler.scale(loss)")
            self.fail(i, problem, hint)

    def why_taken(self, i):
        """Whether the scaler itself skipped (the gradients were not finite) or only the
        answer is wrong."""
        got_scale, exp_scale = (self.got[i]["scaler"].get("scale"),
                                self.exp[i]["scaler"].get("scale"))
        before = self.exp[i - 1]["scaler"].get("scale") if i else self.setup["scaler"][
            "init_scale"]
        leaked = i > 0 or self.setup.get("stale_grads") is not None
        if (self.setup["steps"][i].get("poison") is None and got_scale is not None
                and got_scale < before and leaked and exp_scale >= before):
            return T("这一步没有注入 inf/NaN，scaler 却跳过了它：梯度里还留着之前"
                     "（有 inf 的那一步）的东西。在 backward 之前清空梯度",
                     "no inf/NaN was injected in this step, yet the scaler skipped it: the "
                     "gradients still held an earlier step's (the one with inf). Clear them "
                     "before the backward")
        return TAKEN

    def numbers(self, i):
        got, exp = self.got[i], self.exp[i]
        for key, what in (("scale", "scaler.get_scale()"),
                          ("_growth_tracker", "scaler._growth_tracker")):
            if (problem := compare.value_equal(got["scaler"].get(key), exp["scaler"].get(key),
                                               what=what)) is not None:
                self.fail(i, problem + T("（scaler.state_dict() 里的值）",
                                         " (as scaler.state_dict() holds it)"), UPDATE)
        if (problem := compare.value_equal(got["lr"], exp["lr"], what="lr")) is not None:
            self.fail(i, problem, SCHEDULER_SKIPPED)
        if exp["grads"] is not None and got["grads"] is not None:
            self.grads(i)
        if (problem := tensors_problem(got["params"], exp["params"], self.names,
                                       **scaled(TOL, exp["params"]))) is not None:
            self.fail(i, T("之后的参数 ", "the parameter ") + problem.message,
                      self.why_params(i))
        self.optimizer_state(i)
        if not got["training"]:
            self.fail(i, T("调用之后模型不在训练模式", "the model is not in training mode "
                           "after the call"), TRAINING)

    def grads(self, i):
        got, exp = self.got[i]["grads"], self.exp[i]["grads"]
        problem = tensors_problem(got, exp, self.names, suffix=".grad (at the step)",
                                  **scaled(TOL, [e for e in exp if e is not None]))
        if problem is None:
            return
        if problem.kind == "none":
            self.fail(i, problem.message, SET_TO_NONE)
        self.fail(i, problem.message, self.why_grads(i))

    def why_grads(self, i):
        pairs = [(g, e) for g, e in zip(self.got[i]["grads"], self.exp[i]["grads"], strict=True)
                 if e is not None]
        if all(g is None for g, _ in pairs):
            return ZEROS_AT_STEP
        if any(g is None for g, _ in pairs):
            return T("有的参数在 step 时没有梯度", "some parameters had no gradient at the step")
        g, e = flat([g for g, _ in pairs]), flat([e for _, e in pairs])
        clip = self.setup.get("max_grad_norm")
        scale = self.exp[i - 1]["scaler"].get("scale") if i else self.setup["scaler"][
            "init_scale"]
        if float(g.abs().max()) == 0.0:
            return ZEROS_AT_STEP
        if clip is not None and scale and math.isclose(float(g.norm()), clip / scale,
                                                       rel_tol=1e-2):
            return CLIP_SCALED
        if clip is not None and float(g.norm()) > clip * (1 + 1e-3):
            return NOT_CLIPPED
        if scale and float((g - e * scale).norm()) <= 1e-2 * float((e * scale).norm()):
            return STILL_SCALED
        if i > 0 or self.setup.get("stale_grads") is not None:
            return LEAK
        return T("step 用的梯度和参考不同", "the gradients the step used differ")

    def why_params(self, i):
        got = flat(self.got[i]["params"])
        if not bool(got.isfinite().all()):
            return STEPPED_ON_INF
        return T("step 之后的参数不对", "the parameters after the step are wrong")

    def optimizer_state(self, i):
        got, exp = self.got[i]["optimizer"], self.exp[i]["optimizer"]
        for name, g, e in zip(self.names, got, exp, strict=True):
            if e is None and g is not None:
                self.fail(i, T(f"优化器为 {name} 建了状态，而它还从来没有梯度",
                               f"the optimizer holds state for {name}, which never had a "
                               f"gradient"), SET_TO_NONE)
            problem = compare.value_close(g, e, what=f"optimizer.state[{name}]",
                                          rtol=TOL["rtol"], atol=TOL["atol"],
                                          per_tensor_scale=True)
            if problem is not None:
                self.fail(i, problem, T("优化器的状态和参考不同：多走了或少走了一步，或者"
                                        "用了不同的梯度",
                                        "the optimizer's state differs: a step too many or "
                                        "too few, or other gradients"))


def run(t, setup):
    """Run the scenario for the submission and the reference and compare them."""
    if not setup.get("device", "cpu").startswith("cuda") and not CPU_SCALER:
        t.skip("这台机器的 torch 没有 CPU 上的 GradScaler（需要 torch >= 2.3）",
               "this machine's torch has no GradScaler for the CPU (torch >= 2.3 has)")
    t.explain_errors(explain)
    got = t.sub.scenario("train", setup)
    exp = t.ref.scenario("train", setup)
    for i, (step, record) in enumerate(zip(setup["steps"], exp, strict=True)):
        # The injected values must make the reference skip: a test bug otherwise.
        assert step.get("poison") is None or not setup["scaler"].get("enabled", True) or \
            unpack(record["returned"])[0][1] is False, f"step {i}: the poison did not skip"
    Comparison(t, setup, got, exp).run()
    return got, exp


# ---------------------------------------------------------------- public cases


def statement_setup(poisoned):
    """The statement's example: y = w·x with w = 0.5, x = 2, y = 3, SGD lr 0.1, StepLR
    halving the lr after every step, max_grad_norm 1, a scaler starting at 1024 that grows
    after every clean step."""
    x, y = torch.tensor([[2.0]]), torch.tensor([[3.0]])
    steps = [{"x": x, "y": y, "poison": None},
             {"x": x, "y": y, "poison": {"value": "inf", "param": None} if poisoned else None},
             {"x": x, "y": y, "poison": None}]
    return {"model": {"kind": "scalar", "seed": 0, "init": [torch.tensor([[0.5]])]},
            "steps": steps, "loss": "mse", "optimizer": {"name": "sgd", "lr": 0.1},
            "scheduler": {"name": "step", "step_size": 1, "gamma": 0.5},
            "scaler": {"init_scale": 1024.0, "growth_interval": 1}, "max_grad_norm": 1.0,
            "device": "cpu", "dtype": "bfloat16", "stale_grads": None, "defaults": False}


def summary(records):
    rows = []
    for r in records:
        loss, taken = unpack(r["returned"])[0]
        rows.append(f"(loss {loss:.6g}, taken {taken}, w {float(r['params'][0]):.6g}, "
                    f"scale {r['scaler'].get('scale')}, lr {r['lr'][0]:g})")
    return "; ".join(rows)


@case(public=True, zh="题面里的例子：y = w·x，一步", en="the statement's example: y = w·x, "
      "one step")
def example_one_step(t):
    setup = statement_setup(False)
    setup["steps"] = setup["steps"][:1]
    got, _ = run(t, setup)
    t.note(f"返回与状态：{summary(got)}", f"returned and state: {summary(got)}")


@case(public=True, zh="题面里的例子：第二步注入 inf，被跳过", en="the statement's example: inf "
      "injected at step 2, which is skipped")
def example_skipped_step(t):
    got, _ = run(t, statement_setup(True))
    t.note(f"每一步：{summary(got)}", f"each step: {summary(got)}")


@case(public=True, zh="MLP、Adam、裁剪、调度器，几步里注入 inf / NaN",
      en="an MLP, Adam, clipping and a scheduler, with inf / NaN injected on some steps")
def example_mlp(t):
    setup = make_setup(t, 6, optimizer={"name": "adam", "lr": 0.01},
                       scheduler={"name": "step", "step_size": 2, "gamma": 0.5},
                       poison={2: {"value": "nan", "param": None},
                               4: {"value": "inf", "param": 2, "index": 3}})
    setup["max_grad_norm"] = sig(0.5 * grad_norm(setup))
    run(t, setup)


# ---------------------------------------------------------------- hidden cases


@case(zh="注入的 inf / NaN：一个参数或模型输出的梯度", en="injected inf / NaN: in one "
      "parameter's gradient or the model output's")
def injected_non_finite(t):
    count = t.random.randint(8, 12)
    run(t, make_setup(t, count, poison=poisons(t, count, 3)))


@case(zh="连续几步都被跳过", en="several skipped steps in a row")
def consecutive_skips(t):
    count = t.random.randint(8, 10)
    start = t.random.randint(2, 4)
    poison = {i: {"value": t.random.choice(["inf", "nan"]), "param": None}
              for i in range(start, start + 3)}
    run(t, make_setup(t, count, poison=poison, optimizer={"name": "adam", "lr": 0.01}))


@case(zh="scale 增长：growth_interval 个正常的步之后", en="the scale grows after "
      "growth_interval clean steps")
def scale_growth(t):
    interval = t.random.randint(1, 3)
    count = 4 * interval + 2
    run(t, make_setup(t, count, scaler={"init_scale": 2.0 ** t.random.randint(4, 12),
                                        "growth_interval": interval,
                                        "growth_factor": t.random.choice([2.0, 4.0])},
                      poison={count - 2: {"value": "inf", "param": None}}))


@case(zh="初始 scale 太大：梯度自然溢出，scale 一直降到合适为止",
      en="an initial scale far too large: the gradients overflow until the scale backs off")
def natural_overflow(t):
    run(t, make_setup(t, t.random.randint(8, 12),
                      scaler={"init_scale": 2.0 ** t.random.randint(126, 127),
                              "backoff_factor": t.random.choice([0.5, 0.25]),
                              "growth_interval": 1000}))


@case(zh="梯度裁剪：先 unscale_ 再裁剪（裁剪起作用）",
      en="clipping after unscale_ (clipping that clips)")
def clip_active(t):
    count = t.random.randint(5, 8)
    setup = make_setup(t, count, poison=poisons(t, count, 1))
    setup["max_grad_norm"] = sig(t.random.uniform(0.2, 0.4) * grad_norm(setup))
    run(t, setup)


@case(zh="梯度裁剪不起作用（max_grad_norm 大于梯度范数）",
      en="clipping that does not clip (max_grad_norm above the gradient's norm)")
def clip_inactive(t):
    count = t.random.randint(5, 8)
    setup = make_setup(t, count, poison=poisons(t, count, 1),
                       optimizer={"name": "adam", "lr": 0.01})
    setup["max_grad_norm"] = sig(50 * grad_norm(setup))
    run(t, setup)


@case(zh="StepLR：只在真正更新的步之后调用", en="StepLR, stepped after taken steps only")
def scheduler_step_lr(t):
    count = t.random.randint(8, 10)
    run(t, make_setup(t, count, poison=poisons(t, count, 2),
                      scheduler={"name": "step", "step_size": 1,
                                 "gamma": t.random.choice([0.5, 0.8])}))


@case(zh="LambdaLR 预热：只在真正更新的步之后调用", en="LambdaLR warm-up, stepped after taken "
      "steps only")
def scheduler_warmup(t):
    count = t.random.randint(8, 10)
    run(t, make_setup(t, count, poison=poisons(t, count, 2),
                      optimizer={"name": "adamw", "lr": 0.01, "weight_decay": 0.01},
                      scheduler={"name": "warmup", "warmup": 3}))


@case(zh="scaler 被禁用（enabled=False）：每一步都算 taken", en="a disabled scaler "
      "(enabled=False): every step is taken")
def disabled_scaler(t):
    setup = make_setup(t, t.random.randint(4, 6), scaler={"enabled": False},
                       scheduler={"name": "step", "step_size": 1, "gamma": 0.7})
    setup["max_grad_norm"] = sig(0.5 * grad_norm(setup))
    run(t, setup)


@case(zh="SGD momentum、Adam、AdamW 的状态", en="the state of SGD with momentum, Adam and AdamW")
def optimizers(t):
    for opt in ({"name": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True},
                {"name": "adam", "lr": 0.01}, {"name": "adamw", "lr": 0.01,
                                                "weight_decay": 0.05}):
        count = t.random.randint(5, 7)
        run(t, make_setup(t, count, optimizer=opt, poison=poisons(t, count, 1)))


@case(zh="没用到的参数（调用前有梯度）：清空后保持 None（set_to_none=True）",
      en="an unused parameter (with a gradient before the call) is cleared to None "
         "(set_to_none=True)")
def unused_parameter(t):
    count = t.random.randint(4, 6)
    run(t, make_setup(t, count, spare=True, poison=poisons(t, count, 1, params=False),
                      optimizer={"name": "adamw", "lr": 0.01, "weight_decay": 0.1},
                      stale_grads=True))


@case(zh="调用前参数上已有梯度", en="gradients already present before the first call")
def stale_gradients(t):
    run(t, make_setup(t, t.random.randint(3, 5), stale_grads=True))


@case(zh="梯度不会从一步漏到下一步", en="no gradient leaks into the next step")
def no_leak_between_steps(t):
    count = t.random.randint(5, 7)
    run(t, make_setup(t, count, optimizer={"name": "sgd", "lr": 0.05},
                      poison=poisons(t, count, 1)))


@case(zh="默认参数：device_type=\"cpu\"，dtype=torch.bfloat16",
      en="the defaults: device_type=\"cpu\", dtype=torch.bfloat16")
def default_arguments(t):
    count = t.random.randint(4, 6)
    run(t, make_setup(t, count, defaults=True, poison=poisons(t, count, 1)))


@case(zh="CPU 上用 float16 的 autocast（用传进来的 dtype）",
      en="float16 autocast on the CPU (the dtype you are given)")
def cpu_float16(t):
    count = t.random.randint(4, 6)
    run(t, make_setup(t, count, dtype="float16", poison=poisons(t, count, 1),
                      scaler={"init_scale": 2.0**12, "growth_interval": 2}))


@case(zh="交叉熵损失", en="a cross-entropy loss")
def cross_entropy_loss(t):
    count = t.random.randint(5, 7)
    run(t, make_setup(t, count, loss="cross_entropy", poison=poisons(t, count, 1),
                      optimizer={"name": "adam", "lr": 0.01}))


@case(zh="所有选项一起：裁剪、调度器、AdamW、注入、增长",
      en="everything together: clipping, a scheduler, AdamW, injections, growth")
def everything_together(t):
    count = t.random.randint(10, 14)
    setup = make_setup(t, count, poison=poisons(t, count, 3), spare=True, stale_grads=True,
                       optimizer={"name": "adamw", "lr": 0.01, "weight_decay": 0.05},
                       scheduler={"name": "warmup", "warmup": 2},
                       scaler={"init_scale": 2.0**8, "growth_interval": 2})
    setup["max_grad_norm"] = sig(0.5 * grad_norm(setup))
    run(t, setup)


# ---------------------------------------------------------------- CUDA (float16)


@case(zh="GPU 上 float16：注入 inf / NaN、裁剪、调度器", en="float16 on the GPU: injected "
      "inf / NaN, clipping, a scheduler", device="cuda")
def cuda_float16(t):
    count = t.random.randint(8, 10)
    setup = make_setup(t, count, device="cuda", dtype="float16", poison=poisons(t, count, 2),
                       optimizer={"name": "adam", "lr": 0.01},
                       scheduler={"name": "step", "step_size": 1, "gamma": 0.8},
                       scaler={"init_scale": 2.0**16, "growth_interval": 2})
    setup["max_grad_norm"] = sig(0.5 * grad_norm(setup))
    run(t, setup)


@case(zh="GPU 上 float16：初始 scale 太大，梯度在 float16 里溢出",
      en="float16 on the GPU: an initial scale so large that float16 gradients overflow",
      device="cuda")
def cuda_float16_overflow(t):
    # From 2**20 the scale backs off for a few steps until the float16 gradients fit, then
    # grows every 2 clean steps until they overflow again.
    run(t, make_setup(t, t.random.randint(12, 16), device="cuda", dtype="float16",
                      scaler={"init_scale": 2.0**20, "growth_interval": 2},
                      scheduler={"name": "warmup", "warmup": 2}))


@case(zh="GPU 上 float16：scaler 被禁用", en="float16 on the GPU: a disabled scaler",
      device="cuda")
def cuda_disabled_scaler(t):
    run(t, make_setup(t, t.random.randint(3, 5), device="cuda", dtype="float16",
                      scaler={"enabled": False}, optimizer={"name": "adamw", "lr": 0.01}))
