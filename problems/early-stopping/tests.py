"""Tests for early-stopping. Public cases first; hidden ones draw fresh inputs per seed.

Every case runs fixture.py's ``run`` scenario for the submission and for the reference on
the same metrics, model and data. Comparison checks, call by call, what ``step`` returned
and the ``best`` / ``best_step`` attributes against the reference's; then that ``step``
did not touch the model, and every ``restore``: the parameter and buffer objects kept, on
their device, holding exactly the weights the model had at the best call (the scenario's
own snapshot of that call), also after more training. When a call's answer differs,
diagnose() replays the metrics through known bugs (simulate() below) to name the likely
one.
"""

import math

from judge import compare
from judge.i18n import T
from judge.testing import case

SEP = T(" —— ", " — ")
# Training is deterministic and the same in both runners; a little room for a GPU.
TRAIN_TOL = {"rtol": 1e-5, "atol": 1e-6}


# ---------------------------------------------------------------- the grader's own model


def simulate(metrics, patience, min_delta=0.0, mode="min", bug=None):
    """What step() returns and best / best_step become after each call, per the contract,
    or with one known ``bug``: [(stop, best, best_step), ...]."""
    d = min_delta

    def better(m, ref):  # strict, with min_delta on the right side
        return m < ref - d if mode == "min" else m > ref + d

    improves = {
        None: lambda m, ref: math.isfinite(m) and (ref is None or better(m, ref)),
        # `best is None or metric < best - d`: a first NaN becomes best, -inf improves
        "no_finite_check": lambda m, ref: ref is None or better(m, ref),
        "nan_only_check": lambda m, ref: not math.isnan(m) and (ref is None or better(m, ref)),
        # `not (metric >= best - d)`: every comparison with NaN is False
        "negated_compare": lambda m, ref: ref is None or not (
            m >= ref - d if mode == "min" else m <= ref + d),
        "wrong_sign": lambda m, ref: math.isfinite(m) and (ref is None or (
            m < ref - d if mode == "min" else m > ref - d)),
        "ties_improve": lambda m, ref: math.isfinite(m) and (ref is None or (
            m <= ref - d if mode == "min" else m >= ref + d)),
    }.get(bug, lambda m, ref: math.isfinite(m) and (ref is None or better(m, ref)))
    best, best_step, bad, previous, out = None, None, 0, None, []
    for i, m in enumerate(metrics, 1):
        ref = previous if bug == "last_metric" and previous is not None else best
        if improves(m, ref):
            best, best_step = m, i
            if bug != "no_reset":
                bad = 0
            stop = bad >= patience if bug in ("no_reset", "uniform_return") else False
        else:
            bad += 1
            stop = bad > patience if bug == "off_by_one" else bad >= patience
        previous = m
        out.append((stop, best, best_step))
    return out


HINTS = {
    "off_by_one": T("patience 差了一：连续 patience 次没有改进时就该返回 True"
                    "（计数 >= patience，而不是 > patience；patience=0 时第一次没有改进就停）",
                    "patience is off by one: return True once the number of consecutive calls "
                    "without improvement REACHES patience (count >= patience, not > patience; "
                    "patience=0 stops on the first call without improvement)"),
    "uniform_return": T("改进时返回 False：即使 patience=0，有改进的那次调用也不停",
                        "an improvement returns False: even with patience=0, a call that "
                        "improves does not stop"),
    "no_reset": T("改进时没有把\"连续没有改进\"的计数清零",
                  "the count of calls without improvement was not reset to 0 on an "
                  "improvement"),
    "wrong_sign": T("\"max\" 模式下 min_delta 的符号反了：改进是 metric > best + min_delta，"
                    "不是 metric > best - min_delta",
                    "min_delta has the wrong sign in \"max\" mode: an improvement is "
                    "metric > best + min_delta, not metric > best - min_delta"),
    "nan_only_check": T("±inf 被当成了改进：只排除 NaN 不够，非有限的指标（NaN、inf、-inf）"
                        "都不算改进（math.isfinite）",
                        "an infinite metric was counted as an improvement: excluding NaN is "
                        "not enough, no non-finite metric (NaN, inf, -inf) is one "
                        "(math.isfinite)"),
    "no_finite_check": T("非有限的指标（NaN、inf、-inf）不是改进：第一个指标是 NaN 时它不能"
                         "成为 best（之后任何比较都是 False，再也不会改进），-inf 也不能。"
                         "先用 math.isfinite 检查",
                         "a non-finite metric (NaN, inf, -inf) is no improvement: a first NaN "
                         "must not become best (every later comparison with it is False, so "
                         "nothing would improve again), nor may -inf. Check "
                         "math.isfinite(metric) first"),
    "negated_compare": T("NaN 被当成了改进：NaN 的任何比较都是 False，"
                         "not (metric >= best) 这样的写法会把它算作改进。先用 math.isfinite 检查",
                         "NaN was counted as an improvement: every comparison with NaN is "
                         "False, so a test written as not (metric >= best) lets it through. "
                         "Check math.isfinite(metric) first"),
    "ties_improve": T("和 best 相等（或者恰好差 min_delta）不算改进：用严格的 < 或 >",
                      "a metric equal to best (or exactly min_delta away) is not an "
                      "improvement: use a strict < or >"),
    "last_metric": T("应当和目前最好的指标 best 比较，而不是和上一次的指标比较",
                     "compare with the best metric so far, not with the previous call's metric"),
}
CONTRACT = T("改进的定义：\"min\" 模式 metric < best - min_delta，\"max\" 模式 "
             "metric > best + min_delta；第一个有限的指标总是改进；连续没有改进的次数达到 "
             "patience 时返回 True",
             "an improvement is metric < best - min_delta in \"min\" mode and "
             "metric > best + min_delta in \"max\" mode; the first finite metric always is one; "
             "step returns True once the consecutive calls without improvement reach patience")
STATE = T("从 state_dict 恢复的新 EarlyStopping 没有接着原来的继续：state_dict 要保存所有计数"
          "（调用次数、连续没有改进的次数、best、best_step）和最好的权重",
          "the new EarlyStopping loaded from state_dict did not carry on where the old one "
          "stopped: state_dict must hold every counter (calls so far, consecutive calls "
          "without improvement, best, best_step) and the best weights")


def same_records(a, b):
    """Lists of (stop, best, best_step) equal, NaN equal to NaN."""
    def key(r):
        return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in r)
    return len(a) == len(b) and all(key(x) == key(y) for x, y in zip(a, b, strict=True))


def diagnose(spec, got_records, upto):
    """The hint for a first wrong answer at call ``upto`` (1-based): the known bug whose
    simulation agrees with everything the submission answered up to there; else, when the
    object was reloaded from its state_dict before that call, the state."""
    args = spec["args"]
    got = [(r["stop"], r["best"], r["best_step"]) for r in got_records[:upto]]
    options = (spec["metrics"], args["patience"], args.get("min_delta", 0.0),
               args.get("mode", "min"))
    reloaded = any(s < upto for s in spec.get("save_at", ()))
    for bug, hint in HINTS.items():
        if same_records(simulate(*options, bug)[:upto], got):
            # After a reload the same answers may come from a state that lost a counter.
            return hint + T("。也可能是：", ". Or: ") + STATE if reloaded else hint
    return STATE if reloaded else CONTRACT


# ---------------------------------------------------------------- inputs


def show_metric(m):
    return repr(m) if math.isfinite(m) else {"nan": "nan", "inf": "inf", "-inf": "-inf"}[
        str(m)]


def clear_of_edges(metrics, min_delta, mode):
    """``metrics`` with none within 1e-9 of ``best -/+ min_delta`` (nudged by 2e-6). At such
    an edge, mathematically equal tests (metric < best - d, metric + d < best,
    best - metric > d) round differently: random inputs must not depend on that. Cases
    that test the edge on purpose use dyadic values, where all of them are exact."""
    if not min_delta:
        return metrics
    out, best = [], None
    for m in metrics:
        if best is not None and math.isfinite(m):
            edge = best - min_delta if mode == "min" else best + min_delta
            if abs(m - edge) < 1e-9:
                m += 2e-6
        if math.isfinite(m) and (best is None or (
                m < best - min_delta if mode == "min" else m > best + min_delta)):
            best = m
        out.append(m)
    return out


def make_spec(t, metrics, patience, *, min_delta=None, mode=None, optimizer=None,
              device="cpu", dtype="float32", exact_edges=False, **extra):
    """A spec for fixture.run; min_delta and mode are passed only when given (so the
    defaults are exercised too). Metrics are kept clear of the min_delta edge unless
    ``exact_edges`` (dyadic values)."""
    if not exact_edges:
        metrics = clear_of_edges([float(m) for m in metrics], min_delta or 0.0, mode or "min")
    args = {"patience": patience}
    if min_delta is not None:
        args["min_delta"] = min_delta
    if mode is not None:
        args["mode"] = mode
    model = {"sizes": [t.random.randint(3, 6), t.random.randint(4, 8), t.random.randint(1, 3)],
             "seed": t.random.randrange(2**31), "dtype": dtype}
    return {"args": args, "metrics": [float(m) for m in metrics], "model": model,
            "optimizer": optimizer or {"name": "sgd", "lr": 0.05, "momentum": 0.9},
            "data_seed": t.random.randrange(2**31), "train_steps": t.random.randint(1, 2),
            "device": device, **extra}


def random_walk(t, count, *, mode="min", start=1.0, scale=0.05):
    """Metrics that mostly improve at first and then wander, with ties now and then."""
    sign = -1 if mode == "min" else 1
    value, out = start, []
    for i in range(count):
        drift = sign * scale * (1.0 if i < count // 3 else -0.2)
        value = round(value + drift + t.random.gauss(0, scale), 4)
        if out and t.random.random() < 0.15:
            value = t.random.choice(out)  # a tie with an earlier value
        out.append(value)
    return out


# ---------------------------------------------------------------- comparison


class Comparison:
    def __init__(self, t, spec, got, exp):
        self.t, self.spec, self.got, self.exp = t, spec, got, exp
        args = spec["args"]
        shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
        self.ctor = f"EarlyStopping({shown})"

    def fail(self, problem, why=None):
        message = problem if why is None else problem + SEP + why
        self.t.fail(message)

    def where(self, i):
        """'the 5th call es.step(0.83) (metrics so far [...])' for call i (1-based)."""
        metrics = ", ".join(show_metric(m) for m in self.spec["metrics"][:i])
        saves = [s for s in self.spec.get("save_at", ()) if s < i]
        zh_save = f"；第 {saves} 次调用后经 state_dict 换成了新对象" if saves else ""
        en_save = (f"; after call(s) {saves} the object was replaced by a new one loaded "
                   f"from its state_dict" if saves else "")
        return T(f"{self.ctor} 的第 {i} 次 step(metric={show_metric(self.spec['metrics'][i - 1])}"
                 f", model)（到这里的指标依次是 [{metrics}]{zh_save}）：",
                 f"{self.ctor}, call {i} step(metric="
                 f"{show_metric(self.spec['metrics'][i - 1])}, model) (the metrics so far: "
                 f"[{metrics}]{en_save}): ")

    def run(self):
        got, exp = self.got, self.exp
        if not isinstance(got, dict) or not isinstance(got.get("records"), list):
            self.t.fail(T("场景的返回结果格式不对（代码是否改动了评测的 fixture？）",
                          "the scenario's result is malformed (did the code tamper with the "
                          "judge's fixture?)"))
        self.records()
        if "reload_error" in got:
            self.reload_error(got["reload_error"])
        self.snapshots()
        for index, (g, e) in enumerate(zip(got["restores"], exp["restores"], strict=False)):
            self.restore(index, g, e)
        if exp.get("trained") is not None:
            self.trained()

    def records(self):
        got, exp = self.got["records"], self.exp["records"]
        for i, (g, e) in enumerate(zip(got, exp, strict=False), 1):
            self.record(i, g, e)
        if len(got) < len(exp) and "reload_error" not in self.got:
            self.t.fail(T("场景提前结束了", "the scenario ended early"))

    def record(self, i, g, e):
        where = self.where(i)
        if g["stop"] is not e["stop"]:
            if not isinstance(g["stop"], bool):
                self.fail(where + compare.is_type(g["stop"], bool, what="step(...)"),
                          T("step 返回 Python 的 True / False",
                            "step returns a Python bool, True or False"))
            self.fail(where + T(f"返回 {g['stop']}，期望 {e['stop']}",
                                f"returned {g['stop']}, expected {e['stop']}"),
                      diagnose(self.spec, self.got["records"], i))
        for name in ("best", "best_step"):
            if g[name] == "<missing attribute>":
                self.fail(where + T(f"EarlyStopping 对象没有属性 {name}",
                                    f"the EarlyStopping has no attribute {name}"),
                          T("best 和 best_step 是对象的属性，在第一个有限指标之前都是 None",
                            "best and best_step are attributes of the object, None before "
                            "the first finite metric"))
            expected_type = (int, float) if name == "best" else int
            if e[name] is not None and (isinstance(g[name], bool) or not isinstance(
                    g[name], expected_type)):
                self.fail(where + compare.is_type(g[name], expected_type, what=f"es.{name}"),
                          T("best 是 Python float，best_step 是 int",
                            "best is a Python float and best_step an int"))
            if (problem := compare.value_equal(g[name], e[name], what=f"es.{name}")) is not None:
                self.fail(where + problem, diagnose(self.spec, self.got["records"], i))

    def reload_error(self, error):
        self.t.fail(T(f"第 {error['step']} 次 step 之后：torch.save(es.state_dict()) 再 "
                      f"torch.load(..., weights_only=True) 并 load_state_dict 时出错：",
                      f"after call {error['step']}: saving es.state_dict() with torch.save, "
                      f"loading it with torch.load(..., weights_only=True) and "
                      f"load_state_dict into a new EarlyStopping failed: ")
                    + T(f"{error['type']}: {error['message']}",
                        f"{error['type']}: {error['message']}") + SEP
                    + T("state_dict() 里只能放张量、数字、字符串、None、list 和 dict"
                        "（不要放模型或 EarlyStopping 对象本身），这样才能和 checkpoint "
                        "一起保存",
                        "state_dict() must hold only tensors, numbers, strings, None, lists "
                        "and dicts (not a model or the EarlyStopping itself), so that it "
                        "can be saved with a checkpoint"))

    def snapshots(self):
        for i, (g, e) in enumerate(zip(self.got["snapshots"], self.exp["snapshots"],
                                       strict=False), 1):
            for name, value in e.items():
                problem = compare.tensor_close(g.get(name), value, what=name, **TRAIN_TOL)
                if problem is not None:
                    self.fail(T(f"第 {i} 次 step 之前模型的 ", f"the model before call {i}: ")
                              + problem,
                              T("step() 只能读模型，不能改动它（也不能改变它的 train/eval 模式）",
                                "step() must only read the model, never change it (nor its "
                                "train/eval mode)"))

    def restore(self, index, g, e):
        step = e["step"]
        again = e.get("again", False)
        what = (T(f"第 {step} 次 step 之后（再训练一步后第二次）调用 es.restore(model)：",
                  f"es.restore(model) after call {step} (the second time, after more "
                  f"training): ") if again else
                T(f"第 {step} 次 step 之后调用 es.restore(model)：",
                  f"es.restore(model) after call {step}: "))
        if not g.get("same_objects"):
            self.fail(what + T("模型的参数或 buffer 不再是原来的张量对象",
                               "the model's parameters or buffers are no longer the same "
                               "tensor objects"),
                      T("要原地拷贝到模型自己的张量里（model.load_state_dict(best) 或 "
                        "p.copy_(...)）；assign=True 或替换模块的参数会让已有的优化器"
                        "失去对它们的控制",
                        "copy into the model's own tensors in place (model.load_state_dict("
                        "best) or p.copy_(...)); assign=True or replacing the module's "
                        "parameters leaves an optimizer built on them driving the old ones"))
        if g.get("devices") != [e["expected_device"]]:
            self.fail(what + T(f"模型的张量在 {g.get('devices')} 上，期望都在 "
                               f"{e['expected_device']} 上",
                               f"the model's tensors are on {g.get('devices')}, expected all on "
                               f"{e['expected_device']}"),
                      T("恢复到模型所在的设备上（copy_ 会自动搬过去）",
                        "restore onto the model's device (copy_ moves the values across)"))
        best_step = self.exp["records"][step - 1]["best_step"]
        best = self.got["snapshots"][best_step - 1]
        weights = g.get("weights") or {}
        for name, value in best.items():
            if (problem := compare.tensor_equal(weights.get(name), value, what=name)) is not None:
                self.fail(what + T("恢复后的 ", "after restoring, ") + problem
                          + T(f"（应当是第 {best_step} 次 step 时的权重）",
                              f" (expected the weights of call {best_step}, the best)"),
                          self.why_restore(step, weights, again))

    def why_restore(self, step, weights, again):
        """Which call's weights (parameters, buffers) the model holds after restore."""
        snaps = self.got["snapshots"][:step]
        params = {n for n, _ in self.exp["snapshots"][0].items()} - self.buffer_names()

        def matches(names):
            return [i for i, s in enumerate(snaps, 1)
                    if all(compare.tensor_equal(weights.get(n), s[n], what=n) is None
                           for n in names)]

        if again:
            return T("第一次恢复是对的，再训练一会儿后再恢复就不对了：恢复时让模型和保存的最好"
                     "权重共用了内存（p.data = best[...]），之后的训练就改动了它。"
                     "要拷贝数值（p.copy_(...) 或 load_state_dict）",
                     "the first restore was right, but after more training the second one is "
                     "not: restoring made the model share memory with the kept best weights "
                     "(p.data = best[...]), so the training changed them. Copy the values "
                     "(p.copy_(...) or load_state_dict)")
        param_steps, buffer_steps = matches(params), matches(self.buffer_names())
        best_step = self.exp["records"][step - 1]["best_step"]
        if best_step in param_steps and best_step not in buffer_steps:
            return T("参数恢复了，buffer（BatchNorm 的 running_mean / running_var / "
                     "num_batches_tracked）没有：最好的权重要包括所有 buffer（model.state_dict() "
                     "里都有）",
                     "the parameters were restored but the buffers (BatchNorm's running_mean, "
                     "running_var, num_batches_tracked) were not: keep every buffer too "
                     "(model.state_dict() has them)")
        if step in param_steps:
            return T("模型里是最近一次 step 时的权重：保存的\"最好权重\"其实是对模型张量的引用"
                     "（model.state_dict() 的张量就是模型的参数本身，"
                     "优化器原地更新时它们也跟着变）。"
                     "要复制：{k: v.detach().clone() for k, v in model.state_dict().items()} "
                     "或 copy.deepcopy(model.state_dict())",
                     "the model holds the weights of the latest call: the kept \"best weights\" "
                     "were references to the model's tensors (model.state_dict()'s tensors ARE "
                     "the live parameters, and the optimizer updates them in place). Copy "
                     "them: {k: v.detach().clone() for k, v in model.state_dict().items()} or "
                     "copy.deepcopy(model.state_dict())")
        if param_steps:
            return T(f"模型里是第 {param_steps[-1]} 次 step 时的权重：只在指标改进时保存权重",
                     f"the model holds the weights of call {param_steps[-1]}: keep the weights "
                     f"when (and only when) the metric improves")
        return T("恢复的值不是任何一次 step 时的权重", "the restored values are not the "
                 "weights of any call")

    def buffer_names(self):
        first = self.exp["snapshots"][0]
        return {n for n in first if "running" in n or "num_batches" in n}

    def trained(self):
        g, e = self.got.get("trained") or {}, self.exp["trained"]
        for name, value in e.items():
            if (problem := compare.tensor_close(g.get(name), value, what=name,
                                                **TRAIN_TOL)) is not None:
                self.fail(T("restore 之后再用原来的优化器训练一步，模型的 ",
                            "after restore, training on with the same optimizer, the model's ")
                          + problem,
                          T("优化器更新不到模型的参数了：restore 要原地拷贝到原来的参数里",
                            "the optimizer no longer updates the model's parameters: restore "
                            "must copy into the existing parameters in place"))


def run(t, spec):
    got = t.sub.scenario("run", spec)
    exp = t.ref.scenario("run", spec)
    args = spec["args"]
    expected = simulate(spec["metrics"], args["patience"], args.get("min_delta", 0.0),
                        args.get("mode", "min"))
    # The hints rest on simulate(): it must agree with the reference (a test bug otherwise).
    assert same_records(expected, [(r["stop"], r["best"], r["best_step"])
                                   for r in exp["records"]]), "simulate() disagrees"
    Comparison(t, spec, got, exp).run()
    return got, exp


# ---------------------------------------------------------------- public cases


@case(public=True, zh="题面里的例子：\"min\" 模式，patience=2，min_delta=0.01",
      en="the statement's example: \"min\" mode, patience=2, min_delta=0.01")
def example_worked(t):
    metrics = [1.0, 0.8, 0.795, 0.78, 0.85, 0.79, 0.775]
    got, _ = run(t, make_spec(t, metrics, 2, min_delta=0.01))
    stops = [r["stop"] for r in got["records"]]
    last = got["records"][-1]
    t.note(f"step 依次返回 {stops}；best={last['best']}，best_step={last['best_step']}",
           f"step returned {stops}; best={last['best']}, best_step={last['best_step']}")


@case(public=True, zh="\"max\" 模式、NaN、从 state_dict 恢复",
      en="\"max\" mode, a NaN, and resuming from state_dict")
def example_max_mode_and_resume(t):
    metrics = [0.5, 0.62, math.nan, 0.61, 0.65, 0.64]
    run(t, make_spec(t, metrics, 1, min_delta=0.02, mode="max", save_at=[3]))


# ---------------------------------------------------------------- hidden cases


@case(zh="\"min\" 模式，随机的指标", en="\"min\" mode, random metrics")
def min_mode_random(t):
    for _ in range(3):
        patience = t.random.randint(1, 4)
        run(t, make_spec(t, random_walk(t, t.random.randint(8, 14)), patience))


@case(zh="\"max\" 模式，随机的指标和 min_delta", en="\"max\" mode, random metrics and min_delta")
def max_mode_random(t):
    for _ in range(3):
        metrics = random_walk(t, t.random.randint(8, 14), mode="max", start=0.3, scale=0.03)
        run(t, make_spec(t, metrics, t.random.randint(1, 3), mode="max",
                         min_delta=t.random.choice([0.01, 0.02, 0.005])))


@case(zh="min_delta 的边界（\"max\" 模式）：比 best 高但不到 min_delta 不算改进",
      en="min_delta at the edge (\"max\" mode): above best by less than min_delta is no "
         "improvement")
def max_mode_min_delta_edge(t):
    # Dyadic values: best + min_delta is exact, so every correct formulation agrees.
    base, delta = t.random.choice([0.5, 0.625, 0.75]), t.random.choice([0.0625, 0.125])
    metrics = [base, base + delta / 2, base - delta / 2, base + delta, base + delta * 1.5,
               base + delta * 1.25, base + delta * 2.75, base + delta * 2.5]
    run(t, make_spec(t, metrics, t.random.randint(1, 3), mode="max", min_delta=delta,
                     exact_edges=True))


@case(zh="min_delta 的边界（\"min\" 模式）", en="min_delta at the edge (\"min\" mode)")
def min_mode_min_delta_edge(t):
    base, delta = t.random.choice([1.5, 2.0, 2.25]), t.random.choice([0.0625, 0.125])
    metrics = [base, base - delta / 2, base - delta, base + delta, base - delta * 1.5,
               base - delta * 2.5, base - delta * 2.75]
    run(t, make_spec(t, metrics, t.random.randint(1, 3), min_delta=delta, exact_edges=True))


@case(zh="和 best 相等不算改进", en="a metric equal to best is no improvement")
def ties_are_not_improvements(t):
    for mode in ("min", "max"):
        a = t.random.choice([0.25, 0.5, 0.75])
        better = a - 0.125 if mode == "min" else a + 0.125
        metrics = [a, a, better, better, a, better]
        run(t, make_spec(t, metrics, t.random.randint(1, 2), mode=mode))


@case(zh="patience = 0：第一次没有改进就停", en="patience = 0: stop on the first call without "
      "improvement")
def patience_zero(t):
    metrics = random_walk(t, 8)
    metrics[3] = metrics[2]  # at least one call without improvement
    run(t, make_spec(t, metrics, 0))


@case(zh="恰好 patience 次没有改进时返回 True，之后继续返回 True",
      en="True exactly when patience calls in a row did not improve, and True after that")
def patience_boundary(t):
    patience = t.random.randint(2, 5)
    start = t.random.uniform(1.0, 2.0)
    worse = [round(start + t.random.uniform(0.01, 0.5), 4) for _ in range(patience + 2)]
    metrics = [start, *worse, start - 0.5, *worse[:patience]]
    run(t, make_spec(t, metrics, patience))


@case(zh="改进会把计数清零", en="an improvement resets the count")
def count_resets(t):
    patience = t.random.randint(2, 4)
    value, metrics = 2.0, [2.0]
    for _ in range(3):
        metrics += [round(value + t.random.uniform(0.01, 0.3), 4)
                    for _ in range(patience - 1)]
        value = round(value - t.random.uniform(0.05, 0.2), 4)
        metrics.append(value)
    metrics += [value + 1] * patience
    run(t, make_spec(t, metrics, patience))


@case(zh="NaN 的指标永远不算改进", en="a NaN metric is never an improvement")
def nan_metrics(t):
    for mode in ("min", "max"):
        metrics = random_walk(t, 9, mode=mode)
        for i in t.random.sample(range(1, 9), 3):
            metrics[i] = math.nan
        run(t, make_spec(t, metrics, t.random.randint(1, 3), mode=mode))


@case(zh="inf 和 -inf 永远不算改进", en="inf and -inf are never improvements")
def infinite_metrics(t):
    for mode, bad in (("min", -math.inf), ("max", math.inf)):
        metrics = random_walk(t, 9, mode=mode)
        metrics[t.random.randint(2, 4)] = bad
        metrics[t.random.randint(5, 7)] = -bad
        run(t, make_spec(t, metrics, t.random.randint(2, 3), mode=mode))


@case(zh="开头的指标不是有限数：best 保持 None", en="non-finite metrics first: best stays None")
def nonfinite_first(t):
    for first in ([math.nan], [math.inf, math.nan], [-math.inf]):
        mode = t.random.choice(["min", "max"])
        metrics = first + random_walk(t, 5, mode=mode)
        run(t, make_spec(t, metrics, t.random.randint(1, 3), mode=mode))


@case(zh="最好的权重是副本：之后的训练（原地更新）不会改动它",
      en="the best weights are a copy: later in-place training does not change them")
def best_weights_are_copies(t):
    patience = t.random.randint(3, 5)
    metrics = [1.0, 0.8, 0.7] + [round(0.7 + t.random.uniform(0.0, 0.2), 4)
                                 for _ in range(patience + 1)]
    run(t, make_spec(t, metrics, patience,
                     optimizer={"name": "sgd", "lr": 0.1, "momentum": 0.9}))


@case(zh="buffer 也要保存和恢复（BatchNorm 的统计量）",
      en="buffers are kept and restored too (BatchNorm's statistics)")
def buffers_restored(t):
    metrics = [0.9, 0.5] + [round(t.random.uniform(0.6, 0.9), 4) for _ in range(4)]
    run(t, make_spec(t, metrics, 10, optimizer={"name": "sgd", "lr": 0.0}))


@case(zh="restore 原地拷贝：参数对象不变，优化器继续起作用",
      en="restore copies in place: the same parameter objects, and the optimizer keeps working")
def restore_in_place(t):
    metrics = [0.9, 0.7, 0.8, 0.85, 0.75]
    run(t, make_spec(t, metrics, 2, optimizer={"name": "adamw", "lr": 0.01,
                                               "weight_decay": 0.1}))


@case(zh="训练中途 restore 之后继续训练和 step", en="restore midway, then train and step on")
def restore_midway(t):
    metrics = random_walk(t, 12)
    metrics[5] = metrics[4] + 0.5  # no improvement right before the restore
    run(t, make_spec(t, metrics, 3, restore_at=[6, 9]))


@case(zh="state_dict：在不同时刻存下再恢复，新对象接着原来的继续",
      en="state_dict: saved at different points, a new object carries on exactly")
def state_dict_resume(t):
    for _ in range(3):
        patience = t.random.randint(1, 3)
        metrics = random_walk(t, 10)
        metrics[0] = math.nan  # a save before any finite metric
        saves = sorted(t.random.sample(range(2, 10), 3))
        run(t, make_spec(t, metrics, patience, min_delta=t.random.choice([0.0, 0.01]),
                         save_at=[1, *saves]))


@case(zh="从 state_dict 恢复后 restore：最好的权重在存档之前",
      en="restore after loading a state_dict: the best weights are from before the save")
def restore_after_resume(t):
    metrics = [1.0, 0.6, 0.7, 0.8, 0.75, 0.9]
    run(t, make_spec(t, metrics, 5, mode="min", save_at=[2, 4]))


@case(zh="float64 模型和 AdamW", en="a float64 model and AdamW")
def float64_adamw(t):
    run(t, make_spec(t, random_walk(t, 10), 2, dtype="float64",
                     optimizer={"name": "adamw", "lr": 0.02, "weight_decay": 0.05}))


@case(zh="很长的一串指标", en="a long run of metrics")
def long_run(t):
    metrics = random_walk(t, 60, scale=0.02)
    run(t, make_spec(t, metrics, t.random.randint(3, 6), min_delta=0.005, save_at=[30]))


@case(zh="参数不合法时抛出 ValueError", en="ValueError for invalid arguments")
def invalid_arguments(t):
    for args in ({"patience": -1}, {"patience": -t.random.randint(2, 5), "mode": "max"},
                 {"patience": 2, "min_delta": -0.01}, {"patience": 1, "mode": "mean"},
                 {"patience": 3, "mode": t.random.choice(["maximum", "MIN", "minimize"])}):
        shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
        t.expect_raises("ValueError", lambda a=args: t.sub.scenario("construct", a),
                        f"EarlyStopping({shown})")
    for args in ({"patience": 0}, {"patience": 0, "min_delta": 0.0, "mode": "max"}):
        t.expect_equal(t.sub.scenario("construct", args), "constructed",
                       "EarlyStopping(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")",
                       hint=T("patience=0 和 min_delta=0 是合法的参数",
                              "patience=0 and min_delta=0 are valid arguments"))


@case(zh="在 GPU 上（CUDA）：恢复到模型所在的设备", en="on the GPU (CUDA): restored onto the "
      "model's device", device="cuda")
def on_cuda(t):
    metrics = random_walk(t, 8)
    metrics[4] = metrics[3] + 0.3
    run(t, make_spec(t, metrics, 3, device="cuda", save_at=[4], restore_at=[5]))
