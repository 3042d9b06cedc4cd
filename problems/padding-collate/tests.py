"""Tests for padding-collate. Public cases first; hidden ones draw fresh inputs per seed."""

import torch

from judge import compare
from judge.i18n import T
from judge.session import SubmissionError
from judge.testing import case, workload
from judge.throughput import Workload

KEYS = {"input_ids": None, "attention_mask": None, "labels": None}
ORDER = ("pad_id", "pad_to_multiple_of", "padding_side")  # the positional order after batch
DEFAULTS = {"pad_id": 0, "pad_to_multiple_of": None, "padding_side": "right"}
SEP = T(" —— ", " — ")
HINT_ORDER = T(
    "用关键字参数调用时结果正确，按位置传参却不对：参数顺序是签名的一部分，必须是 "
    "collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side=\"right\")，"
    "collate(batch, 0, 8, \"left\") 这样的调用也要能用",
    "called with keywords it gives the right answer, with positional arguments it does not: "
    "the order of the parameters is part of the signature, collate(batch, pad_id=0, "
    "pad_to_multiple_of=None, padding_side=\"right\"), and a call like collate(batch, 0, 8, "
    "\"left\") must work too")


# ---------------------------------------------------------------- inputs


def make_batch(t, lengths, *, vocab=1000, pad_id=0, pad_share=0.0):
    """Samples of the given lengths; ``pad_share`` of the tokens are set to pad_id."""
    batch = []
    for n in lengths:
        ids = torch.randint(0, vocab, (n,), generator=t.rng)
        if pad_share and n:
            hit = torch.rand(n, generator=t.rng) < pad_share
            hit[-1] = True  # a real token equal to pad_id at the very end of the sequence
            ids[hit] = pad_id
        batch.append({"input_ids": ids, "label": t.random.randrange(10)})
    return batch


def random_lengths(t, b, low=0, high=40):
    return [t.random.randint(low, high) for _ in range(b)]


def describe(batch, kwargs):
    lengths = [len(s["input_ids"]) for s in batch]
    if len(lengths) > 12:
        lengths = f"[{', '.join(map(str, lengths[:12]))}, ...] ({len(lengths)} samples)"
    opts = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return f"lengths {lengths}" + (f", {opts}" if opts else "")


def positional(kwargs, count):
    """The first ``count`` options after batch, in the signature's order, as a tuple."""
    return tuple(kwargs.get(name, DEFAULTS[name]) for name in ORDER[:count])


def call_text(args, kwargs):
    """How the call was written: collate(batch, 3, 8, padding_side='left')."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return "collate(" + ", ".join(["batch", *parts]) + ")"


# ---------------------------------------------------------------- diagnosis


def diagnose(got, exp, batch, kwargs):
    """A hint that names the likely bug, from how got differs from exp."""
    side = kwargs.get("padding_side", "right")
    mult = kwargs.get("pad_to_multiple_of")
    pad_id = kwargs.get("pad_id", 0)
    g_ids, e_ids = got.get("input_ids"), exp["input_ids"]
    g_mask, e_mask = got.get("attention_mask"), exp["attention_mask"]
    if isinstance(g_ids, torch.Tensor) and g_ids.dim() == 2 and g_ids.shape != e_ids.shape:
        longest = max(len(s["input_ids"]) for s in batch)
        extra = (T(f"，再向上取整到 {mult} 的倍数", f", rounded up to a multiple of {mult}")
                 if mult else T("", ""))
        return T(f"T 应当是这一批里最长的长度 {longest}", f"T must be this batch's longest "
                 f"length {longest}") + extra + T(f"，即 {e_ids.shape[1]}",
                                                   f", that is {e_ids.shape[1]}")
    if isinstance(g_mask, torch.Tensor) and g_mask.dtype != torch.bool:
        return T("attention_mask 必须是 torch.bool", "attention_mask must be torch.bool")
    if (isinstance(g_mask, torch.Tensor) and g_mask.shape == e_mask.shape
            and not torch.equal(g_mask, e_mask)):
        wrong = g_mask != e_mask
        if bool((e_ids[wrong] == pad_id).all()) and bool(e_mask[wrong].all()):
            return T("等于 pad_id 的真实 token 也必须标为 True：掩码要由长度得到，"
                     "不能用 input_ids != pad_id", "a real token equal to pad_id must still be "
                     "masked in: build the mask from the lengths, not from input_ids != pad_id")
        if side == "left":
            return T("左填充：填充在前，token 在后", "left padding: the padding comes first, "
                     "then the tokens")
    if (isinstance(g_ids, torch.Tensor) and g_ids.shape == e_ids.shape
            and g_ids.dtype == e_ids.dtype and not torch.equal(g_ids, e_ids)):
        wrong = g_ids != e_ids
        rows = sorted(map(tuple, e_ids.tolist()))
        if sorted(map(tuple, g_ids.tolist())) == rows:
            return T("行的顺序变了：第 i 行必须是 batch[i]，不要按长度或别的方式重排",
                     "the rows are reordered: row i must be batch[i]; do not sort the batch "
                     "by length or in any other way")
        if not bool(e_mask[wrong].any()):
            return T(f"填充位置必须是 pad_id（{pad_id}）", f"padding positions must hold "
                     f"pad_id ({pad_id})")
        if side == "left":
            return T("左填充时 token 保持原来的顺序，只是整体移到右边",
                     "with left padding the tokens keep their order, shifted to the right")
    return None


def mismatch(got, exp):
    """What differs between a collate result and the reference's, or None."""
    problem = compare.keys_equal(got, KEYS, what="collate(...)")
    for key in KEYS:
        if problem is None:
            problem = compare.tensor_equal(got[key], exp[key], what=key)
    return problem


def keywords_work(t, batch, kwargs, exp):
    """Whether the same call with keyword arguments gives the reference's answer."""
    try:
        return mismatch(t.sub.collate(batch, **kwargs), exp) is None
    except SubmissionError:
        return False


def begin_collate(t, batch, *, by_position=0, **kwargs):
    """Send collate(batch, ...) to the submission and to the reference now; the function
    returned compares their answers (see check_collate). A case that begins all of its
    calls before it checks the first sends them together, and each runner answers them
    back to back (Proxy.begin). ``by_position``: pass that many options after batch
    positionally (pad_id, pad_to_multiple_of, padding_side), the rest as keywords; the
    reference always gets keywords."""
    args = positional(kwargs, by_position)
    rest = {k: v for k, v in kwargs.items() if k not in ORDER[:by_position]}
    expected = t.ref.begin("collate", batch, **kwargs)  # the reference computes meanwhile
    answer = t.sub.begin("collate", batch, *args, return_args=True, **rest)
    return lambda: _checked(t, batch, kwargs, args, rest, expected, answer)


def check_collate(t, batch, *, by_position=0, **kwargs):
    """Call the submission and the reference on the same batch and compare everything."""
    return begin_collate(t, batch, by_position=by_position, **kwargs)()


def check_all(checks):
    """Check the answers of calls begun with begin_collate or begin_value_error, in
    order."""
    for check in checks:
        check()


def _checked(t, batch, kwargs, args, rest, expected, answer):
    context = T(f"\n（输入：{describe(batch, kwargs)}）", f"\n(input: {describe(batch, kwargs)})")
    shown = T.same(call_text(args, rest))
    try:
        res = answer.result
    except SubmissionError as e:
        exp = expected.value
        if not args or not keywords_work(t, batch, kwargs, exp):
            raise
        t.fail(shown + T(f" 抛出了 {e.type}: {e.message}", f" raised {e.type}: {e.message}")
               + SEP + HINT_ORDER + context)
    exp = expected.value
    got = res.value
    problem = mismatch(got, exp)
    if problem is not None:
        if args and keywords_work(t, batch, kwargs, exp):
            t.fail(shown + T("：", ": ") + problem + SEP + HINT_ORDER + context)
        hint = diagnose(got, exp, batch, kwargs) if isinstance(got, dict) else None
        t.fail(problem + (SEP + hint if hint else T("", "")) + context)
    t.expect_equal(res.args[0] if res.args else None, batch, "batch",
                   hint=T("collate 不能修改传入的样本（dict 和张量都不能改）",
                          "collate must not modify the samples (neither the dicts nor the "
                          "tensors)") + context)
    return got


def begin_value_error(t, batch, what, **kwargs):
    """Send collate(batch, **kwargs) now; the function returned checks that it raised
    ValueError (see begin_collate)."""
    answer = t.sub.begin("collate", batch, **kwargs)
    return lambda: t.expect_raises("ValueError", lambda: answer.value, what)


def expect_value_error(t, batch, what, **kwargs):
    begin_value_error(t, batch, what, **kwargs)()


# ---------------------------------------------------------------- public cases


@case(public=True, zh="右填充的基本用法", en="basic right padding")
def example_basic(t):
    batch = [{"input_ids": torch.tensor([5, 6, 7]), "label": 1},
             {"input_ids": torch.tensor([8]), "label": 0},
             {"input_ids": torch.tensor([9, 10]), "label": 1}]
    got = check_collate(t, batch, pad_id=0)
    t.note(f"input_ids = {got['input_ids'].tolist()}", f"input_ids = {got['input_ids'].tolist()}")


@case(public=True, zh="左填充，pad_id 不为 0", en="left padding with a non-zero pad_id")
def example_left_padding(t):
    batch = [{"input_ids": torch.tensor([3, 4]), "label": 2},
             {"input_ids": torch.tensor([5, 6, 7, 8]), "label": 0},
             {"input_ids": torch.tensor([7, 9, 7]), "label": 1}]
    check_collate(t, batch, pad_id=7, padding_side="left")


@case(public=True, zh="长度取整到倍数", en="rounding T up to a multiple")
def example_pad_to_multiple(t):
    batch = [{"input_ids": torch.tensor([1, 2, 3, 4, 5]), "label": 0},
             {"input_ids": torch.tensor([6, 7]), "label": 1}]
    check_collate(t, batch, pad_id=0, pad_to_multiple_of=4)


@case(public=True, zh="空批次和非法 padding_side 抛出 ValueError",
      en="an empty batch and a bad padding_side raise ValueError")
def example_errors(t):
    batch = [{"input_ids": torch.tensor([1, 2]), "label": 0}]
    check_all([begin_value_error(t, [], "collate([])"),
               begin_value_error(t, batch, "collate(batch, padding_side='middle')",
                                 padding_side="middle")])


# ---------------------------------------------------------------- hidden cases
# Each begins its calls, yields, then checks the answers: while it checks, the grader has
# already begun the next case's calls and the runners compute them (judge/pipeline.py).


@case(zh="随机批次，右填充", en="random batches, right padding")
def random_right(t):
    checks = []
    for i in range(6):
        pad_id = t.random.choice([0, 1, t.random.randrange(1000)])
        batch = make_batch(t, random_lengths(t, t.random.randint(2, 16), 1), pad_id=pad_id)
        checks.append(begin_collate(t, batch, pad_id=pad_id, by_position=i % 2))
    yield
    check_all(checks)  # every other call is collate(batch, pad_id)


@case(zh="随机批次，左填充", en="random batches, left padding")
def random_left(t):
    checks = []
    for _ in range(6):
        pad_id = t.random.randrange(1000)
        batch = make_batch(t, random_lengths(t, t.random.randint(2, 16), 1), pad_id=pad_id)
        checks.append(begin_collate(t, batch, pad_id=pad_id, padding_side="left"))
    yield
    check_all(checks)


@case(zh="真实 token 等于 pad_id", en="a real token equals pad_id")
def real_token_equals_pad(t):
    checks = []
    for side in ("right", "left"):
        pad_id = t.random.randrange(1, 50)
        batch = make_batch(t, random_lengths(t, 8, 1, 20), vocab=50, pad_id=pad_id,
                           pad_share=0.3)
        checks.append(begin_collate(t, batch, pad_id=pad_id, padding_side=side))
    yield
    check_all(checks)


@case(zh="只有一个样本的批次", en="a batch of one")
def batch_of_one(t):
    checks = []
    for side in ("right", "left"):
        batch = make_batch(t, [t.random.randint(1, 30)])
        checks.append(begin_collate(t, batch, pad_id=0, padding_side=side))
        checks.append(begin_collate(t, batch, pad_id=3, padding_side=side,
                                    pad_to_multiple_of=8, by_position=3))
    yield
    check_all(checks)


@case(zh="包含空序列 (L = 0)", en="empty sequences (L = 0)")
def empty_sequences(t):
    checks = []
    for side in ("right", "left"):
        lengths = [*random_lengths(t, 6, 0, 12), 0, 0]
        t.random.shuffle(lengths)
        batch = make_batch(t, lengths)
        checks.append(begin_collate(t, batch, pad_id=t.random.randrange(100),
                                    padding_side=side))
    yield
    check_all(checks)


@case(zh="全是空序列：T = 0", en="only empty sequences: T = 0")
def all_empty(t):
    batch = make_batch(t, [0, 0, 0])
    checks = [begin_collate(t, batch, pad_id=0),
              begin_collate(t, batch, pad_id=5, padding_side="left", pad_to_multiple_of=8)]
    yield
    check_all(checks)


@case(zh="T 已经是倍数时不再增加", en="T already a multiple stays as it is")
def multiple_already_aligned(t):
    checks = []
    for mult in (1, 4, 8):
        lengths = random_lengths(t, 5, 0, 2 * mult)
        lengths[0] = 2 * mult
        checks.append(begin_collate(t, make_batch(t, lengths), pad_id=0,
                                    pad_to_multiple_of=mult))
    yield
    check_all(checks)


@case(zh="随机倍数取整，两种填充方向", en="random multiples, both sides")
def random_multiple(t):
    checks = []
    for i in range(6):
        mult = t.random.choice([2, 3, 8, 64])
        side = t.random.choice(["right", "left"])
        pad_id = t.random.randrange(1000)
        batch = make_batch(t, random_lengths(t, t.random.randint(1, 10), 0, 70), pad_id=pad_id)
        checks.append(begin_collate(t, batch, pad_id=pad_id, pad_to_multiple_of=mult,
                                    padding_side=side, by_position=3 * (i % 2)))
    yield
    check_all(checks)


@case(zh="每批填充到本批最长，而非全局最长", en="each batch padded to its own longest")
def longest_of_this_batch(t):
    long_batch = make_batch(t, [t.random.randint(60, 90), *random_lengths(t, 3, 1, 20)])
    short_batch = make_batch(t, random_lengths(t, 4, 1, 6))
    checks = [begin_collate(t, batch, pad_id=0)
              for batch in (long_batch, short_batch, long_batch[1:])]
    yield
    check_all(checks)


@case(zh="大词表的 token id", en="token ids of a large vocabulary")
def large_token_ids(t):
    batch = make_batch(t, random_lengths(t, 8, 1, 30), vocab=50257, pad_id=50256,
                       pad_share=0.1)
    check = begin_collate(t, batch, pad_id=50256,
                          padding_side=t.random.choice(["right", "left"]))
    yield
    check()


@case(zh="较大的批次", en="a larger batch")
def larger_batch(t):
    batch = make_batch(t, random_lengths(t, 128, 0, 300), vocab=32000)
    check = begin_collate(t, batch, pad_id=t.random.randrange(32000), padding_side="left",
                          pad_to_multiple_of=8, by_position=3)
    yield
    check()


@case(zh="按位置传参：collate(batch, pad_id, pad_to_multiple_of, padding_side)",
      en="positional arguments: collate(batch, pad_id, pad_to_multiple_of, padding_side)")
def positional_arguments(t):
    checks = []
    for count in (1, 2, 3):
        for side in ("right", "left"):
            pad_id = t.random.randrange(1, 1000)
            mult = t.random.choice([None, 4, 8]) if count < 3 or side == "right" else 8
            batch = make_batch(t, random_lengths(t, t.random.randint(2, 8), 0, 30))
            checks.append(begin_collate(t, batch, pad_id=pad_id, pad_to_multiple_of=mult,
                                        padding_side=side, by_position=count))
    yield
    check_all(checks)


@case(zh="不修改传入的样本", en="the samples are left unmodified")
def inputs_unmodified(t):
    checks = []
    for side in ("right", "left"):
        batch = make_batch(t, [t.random.randint(1, 5), t.random.randint(10, 20)])
        checks.append(begin_collate(t, batch, pad_id=1, padding_side=side,
                                    pad_to_multiple_of=4))
    yield
    check_all(checks)


@case(zh="非法的 padding_side", en="invalid padding_side values")
def invalid_padding_side(t):
    batch = make_batch(t, [2, 3])
    checks = [begin_value_error(t, batch, f"collate(batch, padding_side={bad!r})",
                                padding_side=bad) for bad in ("Right", "center", "", None)]
    yield
    check_all(checks)


@case(zh="空批次（带其他参数）", en="an empty batch, with other options")
def empty_batch(t):
    check = begin_value_error(t, [], "collate([], pad_id=3, padding_side='left')", pad_id=3,
                              padding_side="left")
    yield
    check()


# ---------------------------------------------------------------- throughput


@workload
def large_batch(device):
    """B = 256 samples of up to 512 tokens, fresh for every timed call. A loop over rows
    keeps up with the reference; a Python loop over tokens does not."""

    def make(rng):
        lengths = torch.randint(1, 513, (256,), generator=rng).tolist()
        side = "left" if int(torch.randint(0, 2, (1,), generator=rng)) else "right"
        pad_id = int(torch.randint(0, 32000, (1,), generator=rng))
        batch = [{"input_ids": torch.randint(0, 32000, (n,), generator=rng),
                  "label": int(torch.randint(0, 10, (1,), generator=rng))} for n in lengths]
        return [batch], {"pad_id": pad_id, "padding_side": side, "pad_to_multiple_of": 8}

    def check(got, exp):
        if not isinstance(got, dict):
            return T(f"期望 dict，得到 {compare.describe_type(got)}",
                     f"expected a dict, got {compare.describe_type(got)}")
        problem = compare.keys_equal(got, KEYS, what="collate(...)")
        for key in KEYS:
            if problem is None:
                problem = compare.tensor_equal(got[key], exp[key], what=key)
        return problem

    # A call is short (~4 ms, half of it moving the result): more pairs for a tight median.
    # Left and right padding are two kinds of call: a submission that flips rows for the
    # left side is slower there than on the right, and the reference is not.
    return Workload(fn="collate", make=make, check=check, max_pairs=200,
                    stratum=lambda args, kwargs: kwargs["padding_side"])
