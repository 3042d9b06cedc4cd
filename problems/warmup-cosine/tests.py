"""Tests for warmup-cosine. Public cases first; hidden ones draw fresh inputs per seed.

Every case runs a fixture.py scenario for the submission and the reference: an optimizer
with one parameter group per learning rate, ``make_scheduler`` on it, a loop of
``optimizer.step(); scheduler.step()``, and every group's ``lr`` and ``get_last_lr()``
after each step. The resume cases save both state dicts halfway (``torch.save``), build
everything again, load (``torch.load(..., weights_only=True)``) and go on; one of them
does it in a new process. The learning rates must match the reference's (which is the
statement's formula) to a relative 1e-9; when one does not, diagnose() evaluates the
formulas that known bugs compute, here in the grader, to name the likely one.
"""

import math

from judge import compare
from judge.i18n import T
from judge.testing import case

RTOL = 1e-9  # the statement's "relative error <= 1e-9"
ATOL = 1e-12  # times the group's base lr: rounding near an lr of 0 is not an error
SEP = T(" —— ", " — ")


# ---------------------------------------------------------------- inputs


def lrs(t, count=None):
    """Distinct initial learning rates, one per parameter group (2 to 4 groups)."""
    count = count or t.random.randint(2, 4)
    values = set()
    while len(values) < count:
        values.add(float(f"{10 ** t.random.uniform(-4, -0.5):.3g}"))
    return t.random.sample(sorted(values), count)


def make_setup(t, warmup, total, ratio=None, *, steps=None, groups=None, keywords=None,
               optimizer=None):
    """A schedule setup; ``ratio=None`` leaves min_lr_ratio to its default."""
    return {"optimizer": {"name": optimizer or t.random.choice(["sgd", "adam", "adamw"]),
                          "lrs": groups or lrs(t)},
            "warmup_steps": warmup, "total_steps": total, "min_lr_ratio": ratio,
            "keywords": t.random.random() < 0.5 if keywords is None else keywords,
            "steps": total + 3 if steps is None else steps}


def random_ratio(t):
    return round(t.random.uniform(0.02, 0.5), 3)


# ---------------------------------------------------------------- the formula and its bugs


def factor(w, total, m, s, *, off_by_one=False, over_total=False, no_clamp=False):
    """The statement's factor lr / base after s steps, or a known bug's."""
    if s < w:
        return (s + 1) / w if off_by_one else s / w
    p = (s - w) / (total if over_total else max(1, total - w))
    if not no_clamp:
        p = min(1.0, p)
    return m + (1 - m) * 0.5 * (1 + math.cos(math.pi * p))


OFF_BY_ONE = T("预热差了一步：s 次 step 之后是 base · s / W（s = 0 时为 0），不是 (s + 1) / W",
               "the warmup is off by one step: after s steps it is base · s / W (0 at s = 0), "
               "not (s + 1) / W")
OVER_TOTAL = T("余弦段应当跨越 T − W 步：p = (s − W) / max(1, T − W)，不是 (s − W) / T",
               "the cosine must span T − W steps: p = (s − W) / max(1, T − W), not "
               "(s − W) / T")
NO_CLAMP = T("T 步之后学习率又升高了：p 要截到 1（p = min(1, …)），之后保持在 base · m",
             "the learning rate rises again after T: clamp p at 1 (p = min(1, ...)) so it "
             "stays at base · m")
ABSOLUTE = T("min_lr_ratio 是相对于每组初始学习率的比例：下限是 base · m，不是 m 本身",
             "min_lr_ratio is a ratio of each group's initial lr: the floor is base · m, not "
             "m itself")
ONE_BASE = T("每个参数组都要按它自己的初始学习率（base_lrs[i]）缩放，而不是共用一个",
             "every parameter group follows its own initial lr (base_lrs[i]), not one shared "
             "value")
PEAK = T("T = W 时没有衰减段：s = W 时 p = 0，学习率是 base；s > W 之后才是 base · m",
         "with T = W there is no decay phase: at s = W, p = 0 and the lr is base; only after "
         "W it is base · m")
RESTARTED = T("恢复之后日程从头开始了：步数要存在调度器自己的状态里（last_epoch，"
              "state_dict() 会保存它），不能放在闭包或计数器里——LambdaLR 不保存普通函数",
              "after resuming, the schedule started over: keep the step count in the "
              "scheduler's own state (last_epoch, which state_dict() saves), not in a closure "
              "or a counter — LambdaLR does not save plain functions")
RESUME = T("恢复之后的学习率应当和不中断时完全一样：调度器的全部状态都要在 state_dict() 里",
           "after resuming, the learning rates must be those of the uninterrupted run: all "
           "of the scheduler's state belongs in its state_dict()")
FORMULA = T("对照题目中的公式：s < W 时 base · s / W；否则 p = min(1, (s − W) / max(1, T − W))，"
            "base · (m + (1 − m) · 0.5 · (1 + cos(π p)))",
            "check the statement's formula: base · s / W for s < W; otherwise "
            "p = min(1, (s − W) / max(1, T − W)) and base · (m + (1 − m) · 0.5 · (1 + cos(π p)))")


def close(a, b, base):
    return abs(a - b) <= ATOL * base + RTOL * abs(b)


def diagnose(setup, s, group, got, *, at=None):
    """The hint for a wrong lr of ``group`` after ``s`` steps (``at``: resumed there)."""
    w, total = setup["warmup_steps"], setup["total_steps"]
    m = setup["min_lr_ratio"] or 0.0
    bases = setup["optimizer"]["lrs"]
    base = bases[group]
    right = factor(w, total, m, s)
    if at is not None and s > at and any(
            close(got, base * factor(w, total, m, k), base) for k in (s - at, s - at - 1)):
        return RESTARTED
    candidates = [(base * factor(w, total, m, s, off_by_one=True), OFF_BY_ONE),
                  (base * factor(w, total, m, s, over_total=True), OVER_TOTAL),
                  (base * factor(w, total, m, s, no_clamp=True), NO_CLAMP),
                  (m + (base - m) * (right - m) / (1 - m) if m < 1 else m, ABSOLUTE)]
    candidates += [(b * right, ONE_BASE) for b in bases if b != base]
    if w == total and s == w and w > 0:
        candidates.append((base * m, PEAK))
    for value, why in candidates:
        if not close(value, base * right, base) and close(got, value, base):
            return why
    return RESUME if at is not None else FORMULA


# ---------------------------------------------------------------- comparison


def describe(setup):
    m = setup["min_lr_ratio"]
    call = (f"make_scheduler(optimizer, warmup_steps={setup['warmup_steps']}, "
            f"total_steps={setup['total_steps']}"
            + ("" if m is None else f", min_lr_ratio={m}") + ")")
    lrs_ = setup["optimizer"]["lrs"]
    return T(f"\n（{call}，{setup['optimizer']['name']} 优化器，各组初始学习率 {lrs_}）",
             f"\n({call}, a {setup['optimizer']['name']} optimizer, groups' initial lrs "
             f"{lrs_})")


def where(s, group, base, at=None):
    resumed_zh = "" if at is None else f"（在 s = {at} 处保存并恢复）"
    resumed_en = "" if at is None else f" (saved and resumed at s = {at})"
    return T(f"调用 {s} 次 scheduler.step() 之后{resumed_zh}，第 {group} 组（初始学习率 "
             f"{base:g}）的 lr",
             f"the lr of group {group} (initial lr {base:g}) after {s} call(s) of "
             f"scheduler.step(){resumed_en}")


def malformed(got):
    ok = (isinstance(got, dict) and isinstance(got.get("lr"), list)
          and isinstance(got.get("last_lr"), list)
          and all(isinstance(row, list) for row in got["lr"]))
    return None if ok else T("场景的返回结果格式不对（代码是否改动了评测的 fixture？）",
                             "the scenario's result is malformed (did the code tamper with the "
                             "judge's fixture?)")


def check_run(t, setup, got, exp, *, start=0, at=None, check_type=False):
    """Every group's lr and get_last_lr(), for s = start, start + 1, ...; with
    ``check_type``, also that make_scheduler returned an LRScheduler."""
    context = describe(setup)
    if isinstance(got, dict) and "error" in got:
        t.fail(T(f"无法保存或恢复调度器的状态：{got['error']}",
                 f"the scheduler's state could not be saved or restored: {got['error']}")
               + SEP + T("state_dict() 里只能放数字、字符串、列表、字典和张量（不要放函数）："
                         "恢复时用 torch.load(..., weights_only=True) 读取",
                         "keep only numbers, strings, lists, dicts and tensors in "
                         "state_dict() (no functions): it is read back with "
                         "torch.load(..., weights_only=True)") + context)
    if (problem := malformed(got)) is not None:
        t.fail(problem)
    if check_type and got.get("is_lr_scheduler") is not True:
        t.fail(T(f"make_scheduler 应当返回 torch.optim.lr_scheduler.LRScheduler，得到的是 "
                 f"{got.get('type')}",
                 f"make_scheduler must return a torch.optim.lr_scheduler.LRScheduler, got a "
                 f"{got.get('type')}") + context)
    bases = setup["optimizer"]["lrs"]
    for i, (g_row, e_row) in enumerate(zip(got["lr"], exp["lr"], strict=False)):
        s = start + i
        for j, (g, e) in enumerate(zip(g_row, e_row, strict=True)):
            problem = compare.float_close(g, e, what="lr", rtol=RTOL, atol=ATOL * bases[j])
            if problem is not None:
                why = (diagnose(setup, s, j, float(g), at=at) if isinstance(g, float)
                       else T("学习率应当是 Python float", "a learning rate is a Python float"))
                t.fail(where(s, j, bases[j], at) + T("：", ": ") + problem + SEP + why
                       + context)
    if len(got["lr"]) != len(exp["lr"]) or any(len(r) != len(bases) for r in got["lr"]):
        t.fail(T("记录的学习率个数不对（参数组被改动了？）",
                 "the recorded learning rates have the wrong size (were the parameter groups "
                 "changed?)") + context)
    check_last_lr(t, setup, got, start, context)


def check_last_lr(t, setup, got, start, context):
    for i, (last, row) in enumerate(zip(got["last_lr"], got["lr"], strict=True)):
        problem = compare.value_close(last, row, what="get_last_lr()", rtol=1e-12, atol=0.0)
        if problem is not None:
            t.fail(T(f"调用 {start + i} 次 scheduler.step() 之后：", f"after {start + i} "
                     f"call(s) of scheduler.step(): ") + problem
                   + T("（应当与各参数组的 lr 相同）", " (it must equal the groups' lr)")
                   + SEP + T("get_lr() 返回的就是各组的新学习率；不要在 step() 之外改 lr",
                             "get_lr() returns the groups' new learning rates; do not set "
                             "lr outside step()") + context)


def run(t, setup):
    got = t.sub.scenario("schedule", setup)
    exp = t.ref.scenario("schedule", setup)
    check_run(t, setup, got, exp, check_type=True)
    return got, exp


def resume(t, setup, at):
    """Save at ``at``, rebuild, load and go on; compared with the uninterrupted run."""
    setup = {**setup, "at": at}
    got = t.sub.scenario("resume", setup)
    exp = t.ref.scenario("schedule", setup)
    check_run(t, setup, got, exp, at=at)


def expect_value_error(t, setup, why):
    t.expect_raises("ValueError", lambda: t.sub.scenario("construct", setup),
                    f"make_scheduler(optimizer, {setup['warmup_steps']}, "
                    f"{setup['total_steps']}, {setup['min_lr_ratio']})", hint=why)


# ---------------------------------------------------------------- public cases


@case(public=True, zh="题目中的例子：W = 2，T = 6，m = 0.1，两个参数组",
      en="the statement's example: W = 2, T = 6, m = 0.1, two groups")
def example_worked(t):
    run(t, make_setup(t, 2, 6, 0.1, steps=8, groups=[0.1, 0.01], keywords=False,
                      optimizer="adamw"))


@case(public=True, zh="在 s = 3 处保存、恢复，再继续", en="saved and resumed at s = 3, then on")
def example_resume(t):
    resume(t, make_setup(t, 2, 6, 0.1, steps=8, groups=[0.1, 0.01], keywords=True,
                         optimizer="adamw"), 3)


@case(public=True, zh="参数不合法时抛出 ValueError", en="ValueError for invalid arguments")
def example_invalid(t):
    expect_value_error(t, make_setup(t, 7, 5, 0.0, groups=[0.1], optimizer="sgd"),
                       T("W > T 时应当抛出 ValueError", "W > T must raise ValueError"))


# ---------------------------------------------------------------- hidden cases


@case(zh="预热阶段：s 次 step 后 base · s / W，第一步为 0", en="the warmup: base · s / W, 0 first")
def warmup_phase(t):
    w = t.random.randint(3, 12)
    run(t, make_setup(t, w, w + t.random.randint(5, 30), random_ratio(t), steps=w + 2))


@case(zh="余弦阶段跨越 T − W 步", en="the cosine spans T − W steps")
def cosine_phase(t):
    w = t.random.randint(1, 20)
    run(t, make_setup(t, w, w + t.random.randint(50, 300), random_ratio(t)))


@case(zh="T 步之后保持在 base · m，不再上升", en="after T: constant at base · m, never rising")
def after_total(t):
    w = t.random.randint(0, 5)
    total = w + t.random.randint(4, 20)
    run(t, make_setup(t, w, total, random_ratio(t), steps=3 * total + 5))


@case(zh="各参数组按各自的初始学习率", en="every group follows its own initial lr")
def groups_own_base(t):
    w = t.random.randint(2, 6)
    run(t, make_setup(t, w, w + t.random.randint(8, 20), random_ratio(t), groups=lrs(t, 4)))


@case(zh="min_lr_ratio 是比例，不是绝对学习率", en="min_lr_ratio is a ratio, not an absolute lr")
def ratio_not_absolute(t):
    w = t.random.randint(1, 4)
    run(t, make_setup(t, w, w + t.random.randint(5, 12), round(t.random.uniform(0.3, 0.8), 3)))


@case(zh="min_lr_ratio 省略（默认 0）", en="min_lr_ratio left to its default (0)")
def default_ratio(t):
    w = t.random.randint(1, 5)
    run(t, make_setup(t, w, w + t.random.randint(5, 40), None))


@case(zh="min_lr_ratio = 1：预热之后保持不变", en="min_lr_ratio = 1: constant after the warmup")
def ratio_one(t):
    w = t.random.randint(1, 5)
    run(t, make_setup(t, w, w + t.random.randint(3, 10), 1.0))


@case(zh="没有预热：W = 0", en="no warmup: W = 0")
def no_warmup(t):
    run(t, make_setup(t, 0, t.random.randint(5, 40), t.random.choice([None, random_ratio(t)])))


@case(zh="没有衰减段：T = W", en="no decay phase: T = W")
def no_decay(t):
    w = t.random.randint(1, 8)
    run(t, make_setup(t, w, w, random_ratio(t), steps=w + 4))


@case(zh="最短的日程：T = 1（W = 0 和 W = 1）", en="the shortest schedules: T = 1 (W = 0, W = 1)")
def shortest(t):
    for w, m in ((0, random_ratio(t)), (1, random_ratio(t)), (0, None)):
        run(t, make_setup(t, w, 1, m, steps=4))


@case(zh="在预热中途保存、恢复", en="saved and resumed during the warmup")
def resume_in_warmup(t):
    w = t.random.randint(3, 10)
    resume(t, make_setup(t, w, w + t.random.randint(5, 20), random_ratio(t)),
           t.random.randint(1, w - 1))


@case(zh="刚创建就保存、恢复（s = 0）", en="saved and resumed right after creation (s = 0)")
def resume_at_start(t):
    w = t.random.randint(1, 6)
    resume(t, make_setup(t, w, w + t.random.randint(5, 20), random_ratio(t)), 0)


@case(zh="在余弦阶段保存、恢复（包括恰好在 s = W 处）",
      en="saved and resumed during the cosine (and exactly at s = W)")
def resume_in_cosine(t):
    w = t.random.randint(1, 6)
    total = w + t.random.randint(10, 40)
    setup = make_setup(t, w, total, random_ratio(t))
    resume(t, setup, w)
    resume(t, setup, t.random.randint(w + 1, total - 1))


@case(zh="在 T 之后保存、恢复", en="saved and resumed after T")
def resume_after_total(t):
    w = t.random.randint(0, 4)
    total = w + t.random.randint(3, 10)
    resume(t, make_setup(t, w, total, random_ratio(t), steps=total + 8),
           total + t.random.randint(0, 4))


@case(zh="没有预热（W = 0）时保存、恢复", en="saved and resumed without a warmup (W = 0)")
def resume_no_warmup(t):
    total = t.random.randint(5, 30)
    resume(t, make_setup(t, 0, total, None), t.random.randint(1, total - 1))


@case(zh="在一个新进程里恢复（真正的重启）", en="resumed in a new process (a real restart)")
def resume_new_process(t):
    w = t.random.randint(2, 8)
    total = w + t.random.randint(5, 25)
    setup = {**make_setup(t, w, total, random_ratio(t)), "at": t.random.randint(1, total)}
    saved = t.sub.scenario("save_at", setup)
    exp = t.ref.scenario("schedule", setup)
    if isinstance(saved, dict) and "error" in saved:
        check_run(t, setup, saved, exp, at=setup["at"])
    with t.fresh() as process:
        got = process.scenario("continue_from", setup, saved)
    tail = {"lr": exp["lr"][setup["at"]:], "last_lr": exp["last_lr"][setup["at"]:]}
    check_run(t, setup, got, tail, start=setup["at"], at=setup["at"])


@case(zh="参数不合法时抛出 ValueError（W < 0、T < 1、W > T、m 超出 [0, 1]）",
      en="ValueError for W < 0, T < 1, W > T, m outside [0, 1]")
def invalid_arguments(t):
    total = t.random.randint(2, 20)
    for w, n, m, why in [
            (-t.random.randint(1, 5), total, 0.0, T("W < 0", "W < 0")),
            (0, 0, 0.0, T("T < 1", "T < 1")),
            (total + t.random.randint(1, 5), total, 0.1, T("W > T", "W > T")),
            (1, total, -round(t.random.uniform(0.01, 1), 2), T("m < 0", "m < 0")),
            (1, total, round(t.random.uniform(1.01, 3), 2), T("m > 1", "m > 1"))]:
        expect_value_error(t, make_setup(t, w, n, m, groups=[0.1], optimizer="sgd"),
                           why + T(" 时应当抛出 ValueError", " must raise ValueError"))


@case(zh="边界上的合法参数不抛异常（W = T、m = 0、m = 1）",
      en="valid edge arguments do not raise (W = T, m = 0, m = 1)")
def valid_edges(t):
    total = t.random.randint(1, 10)
    for w, m in ((total, 0.0), (0, 1.0), (total, 1.0)):
        run(t, make_setup(t, w, total, m, steps=total + 2))
