"""Tests for length-bucketing. Public cases first; hidden ones draw fresh inputs per seed.

fixture.py builds and iterates the sampler inside the sandbox; what comes back is checked
here against the contract, and against the reference where the contract fixes the answer
(shuffle=False, padding_ratio). A correct solution's free choices are never tested: which
indices share a batch when shuffle=True, the order inside a batch, where the short batch
goes, the pool size or the noise, and how the private RNG is seeded.
"""

import torch

from judge.i18n import T
from judge.testing import case, workload
from judge.throughput import Workload

PAYOFF = 0.4  # bucketed padding: at most this share of random batching's padding
MIXED = (0.3, 0.7)  # allowed share of rising steps between batches (a random order: 0.5)
TREND = 0.25  # |rank correlation| of position and mean length (random: within ±0.06)
TURNS = 0.5  # least share of peaks and valleys among batches (random: 2/3, sawtooth: ~0)
BIG_N = 40_000  # epoch size of the statistical cases


# ---------------------------------------------------------------- inputs


def lognormal_lengths(t, n):
    """Heavy-tailed lengths: ln L ~ N(mu, sigma^2), mu in [4, 5], sigma in [0.7, 0.9]."""
    mu, sigma = t.random.uniform(4.0, 5.0), t.random.uniform(0.7, 0.9)
    x = torch.exp(mu + sigma * torch.randn(n, generator=t.rng, dtype=torch.float64))
    return x.ceil().clamp(1, 16384).long()


def uniform_lengths(t, n, high=12):
    """Short lengths with many ties (zeros included), to test tie-breaking."""
    return torch.randint(0, high + 1, (n,), generator=t.rng)


def new_seed(t):
    return t.random.randrange(2**31)


def n_batches(n, batch_size, drop_last):
    return n // batch_size if drop_last else -(-n // batch_size)


# ---------------------------------------------------------------- messages


def where(**inputs):
    """The inputs of a check, appended to its message: (N=40, batch_size=8, ...)."""
    text = ", ".join(f"{k}={v}" for k, v in inputs.items())
    return T(f"\n（{text}）", f"\n({text})")


def shown(batch, lengths, limit=8):
    """A batch and its lengths, shortened: [4, 9, 1] (lengths [3, 3, 5])."""
    more = ", ..." if len(batch) > limit else ""
    ids = ", ".join(str(i) for i in batch[:limit])
    lens = ", ".join(str(int(lengths[i])) if 0 <= i < len(lengths) else "?"
                     for i in batch[:limit])
    return T(f"[{ids}{more}]（长度 [{lens}{more}]）", f"[{ids}{more}] (lengths [{lens}{more}])")


def describe_bad(bad):
    """The fixture's complaint about what __iter__ yielded."""
    if bad.get("what") == "too_many":
        return T(f"产生了超过 {bad.get('limit')} 个批次：__iter__ 停不下来了吗？",
                 f"more than {bad.get('limit')} batches came out: does __iter__ ever stop?")
    k, kind = bad.get("batch"), bad.get("type")
    tip = T("（numpy 数组或张量请用 .tolist() 转换）",
            " (convert a numpy array or a tensor with .tolist())")
    if bad.get("what") == "batch_type":
        return T(f"第 {k} 个批次是 {kind}，每个批次应当是由 Python int 组成的 list",
                 f"batch {k} is a {kind}; every batch must be a list of Python ints") + tip
    return T(f"第 {k} 个批次的第 {bad.get('position')} 个元素是 {kind}（{bad.get('repr')}），"
             f"应当是 Python int", f"batch {k}, element {bad.get('position')} is a {kind} "
             f"({bad.get('repr')}); indices must be Python ints") + tip


def diagnose_sorted(got, exp, lengths):
    """For shuffle=False: name the likely bug from how the batches differ."""
    g_flat, e_flat = [i for b in got for i in b], [i for b in exp for i in b]
    g_lens = [int(lengths[i]) for i in g_flat]
    if g_lens == sorted(g_lens, reverse=True) and g_lens != sorted(g_lens):
        return T("长度要从短到长（升序），不是降序", "lengths must ascend (shortest first), not "
                 "descend")
    if g_flat != e_flat and g_lens == [int(lengths[i]) for i in e_flat]:
        return T("长度相同的索引要按索引从小到大排（用稳定排序）", "equal lengths must stay in "
                 "index order (use a stable sort)")
    if g_lens != sorted(g_lens):
        return T("shuffle=False 时没有任何随机性：按长度排好后依次切批次、依次产出",
                 "shuffle=False means no randomness: sort by length, cut, yield in order")
    return None


HINT_HELD = T(
    "list(sampler) 同时拿着所有批次，结果却和一个一个取时不同：每个批次都要 yield 一个新的 list"
    "（yield 之后 batch = []，或者 yield 切片），不要 yield 同一个 list 之后再 clear() 或改写它"
    "——list(sampler)、带 worker 或预取的 DataLoader 都会同时持有多个批次",
    "list(sampler), which holds every batch at once, gave other batches than iterating one "
    "batch at a time: yield a new list for every batch (batch = [] after the yield, or a "
    "slice), never one list that is cleared or refilled after the yield — list(sampler) and a "
    "DataLoader with workers or prefetching hold several batches at once")
HINT_PROCESS = T(
    "同一个 (seed, epoch) 在另一个进程里（断点续训、数据并行的另一个 rank）给出了不同的批次："
    "生成器的种子是不是来自 Python 的 hash()？字符串（以及含字符串的 tuple）的 hash 每个进程都不同"
    "（PYTHONHASHSEED）。用算术组合 seed 和 epoch（例如 seed * 1_000_003 + epoch），"
    "或者用 hashlib",
    "the same (seed, epoch) gave other batches in another process (a resumed run, another "
    "data-parallel rank): is the generator seeded from Python's hash()? The hash of a str "
    "(or of a tuple holding one) differs from process to process (PYTHONHASHSEED). Combine "
    "seed and epoch with arithmetic (seed * 1_000_003 + epoch, say) or use hashlib")


# ---------------------------------------------------------------- what came back


def scenario_dict(t, res, keys):
    """A scenario's result, checked for shape (it ran next to the submission)."""
    if not (isinstance(res, dict) and all(k in res for k in keys)):
        t.fail(T("场景返回了无法识别的结果", "the scenario returned something unrecognisable"))
    return res


def unpack(t, rec, at):
    """A recorded epoch ({"flat", "sizes"}) as a list of batches, or the case fails."""
    if isinstance(rec, dict) and isinstance(rec.get("bad"), dict):
        t.fail(describe_bad(rec["bad"]) + at)
    # The fixture builds these in the submission's process, which may have patched it:
    # anything but two 1-d int64 tensors of consistent sizes is the submission's doing.
    flat, sizes = (rec.get("flat"), rec.get("sizes")) if isinstance(rec, dict) else (None, None)
    if not (isinstance(flat, torch.Tensor) and isinstance(sizes, torch.Tensor)
            and flat.dtype == sizes.dtype == torch.int64 and flat.dim() == sizes.dim() == 1
            and bool((sizes >= 0).all()) and int(sizes.sum()) == flat.numel()):
        t.fail(T("场景返回了无法识别的结果", "the scenario returned something unrecognisable") + at)
    flat, batches, pos = rec["flat"].tolist(), [], 0
    for size in rec["sizes"].tolist():
        batches.append(flat[pos: pos + size])
        pos += size
    return batches


# ---------------------------------------------------------------- contract checks


def check_partition(t, batches, n, batch_size, drop_last, at):
    """drop_last=False: each index once; every batch full but at most one, none empty.
    drop_last=True: N // batch_size full batches, no index twice."""
    for k, batch in enumerate(batches):
        if not 1 <= len(batch) <= batch_size:
            t.fail(T(f"第 {k} 个批次有 {len(batch)} 个索引，应当在 1 到 batch_size={batch_size} "
                     f"之间", f"batch {k} holds {len(batch)} indices; expected 1 to "
                     f"batch_size={batch_size}") + at)
        bad = next((i for i in batch if not 0 <= i < n), None)
        if bad is not None:
            t.fail(T(f"第 {k} 个批次里的索引 {bad} 越界（应在 0..{n - 1}）",
                     f"batch {k} holds index {bad}, outside 0..{n - 1}") + at)
    counts = torch.bincount(torch.tensor([i for b in batches for i in b], dtype=torch.int64),
                            minlength=n)
    if bool((counts > 1).any()):
        dup = int((counts > 1).nonzero()[0])
        ks = [k for k, b in enumerate(batches) if dup in b][:3]
        t.fail(T(f"索引 {dup} 在一个 epoch 里出现了 {int(counts[dup])} 次（批次 {ks}）—— 每个索引"
                 f"每个 epoch 最多出现一次", f"index {dup} appears {int(counts[dup])} times in "
                 f"one epoch (batches {ks}) — an index may appear at most once per epoch") + at)
    short = [k for k, b in enumerate(batches) if len(b) < batch_size]
    if drop_last:
        if short:
            t.fail(T(f"drop_last=True 时每个批次都恰好有 {batch_size} 个索引，第 {short[0]} 个批次"
                     f"只有 {len(batches[short[0]])} 个", f"with drop_last=True every batch "
                     f"holds exactly {batch_size} indices; batch {short[0]} holds "
                     f"{len(batches[short[0]])}") + at)
        if len(batches) != n // batch_size:
            t.fail(T(f"drop_last=True：期望 N // batch_size = {n // batch_size} 个批次，得到 "
                     f"{len(batches)} 个", f"drop_last=True: expected N // batch_size = "
                     f"{n // batch_size} batches, got {len(batches)}") + at)
        return
    missing = (counts == 0).nonzero().flatten().tolist()
    if missing:
        t.fail(T(f"有 {len(missing)} 个索引没有出现，例如 {missing[:5]} —— drop_last=False 时最后"
                 f"那个不满的批次也要产出", f"{len(missing)} indices never appear, for example "
                 f"{missing[:5]} — with drop_last=False the last, short batch is yielded too")
               + at)
    if len(short) > 1:
        t.fail(T(f"批次 {short[0]} 和 {short[1]} 都不满 {batch_size} 个：最多只能有一个批次不满",
                 f"batches {short[0]} and {short[1]} both hold fewer than {batch_size} "
                 f"indices; at most one batch may be short") + at)


def check_len(t, got, n, batch_size, drop_last, what, at):
    """len() must be the number of batches an epoch yields."""
    expected = n_batches(n, batch_size, drop_last)
    formula = "N // batch_size" if drop_last else "ceil(N / batch_size)"
    if got != expected:
        t.fail(T(f"{what.zh}：期望 {expected}（{formula}，即一个 epoch 产出的批次数），得到 {got}",
                 f"{what.en}: expected {expected} ({formula}, the number of batches an epoch "
                 f"yields), got {got}") + at)


def expect_same_batches(t, got, exp, lengths, what, at, hint=None):
    """The same batches in the same order; else name the first batch that differs."""
    if got == exp:
        return
    k = next((k for k, (g, e) in enumerate(zip(got, exp, strict=False)) if g != e), None)
    if k is None:
        problem = T(f"{what}：期望 {len(exp)} 个批次，得到 {len(got)} 个",
                    f"{what}: expected {len(exp)} batches, got {len(got)}")
    else:
        problem = (T(f"{what} 第 {k} 个批次：期望 ", f"{what}, batch {k}: expected ")
                   + shown(exp[k], lengths) + T("，得到 ", ", got ") + shown(got[k], lengths))
    if hint is not None:
        problem = problem + T(" —— ", " — ") + hint
    t.fail(problem + at)


def after_epoch(at, epoch):
    return at + (T(f"，set_epoch({epoch}) 之后", f", after set_epoch({epoch})")
                 if epoch is not None else T("，再迭代一次", ", iterated again"))


def run_epochs(t, lengths, batch_size, **options):
    """Build a sampler in the sandbox and iterate ``epochs`` (None: iterate again without
    set_epoch): :func:`begin_epochs`, then its answer at once."""
    return begin_epochs(t, lengths, batch_size, **options)()


def begin_epochs(t, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0, epochs=(0,),
                 kind="list", role="sub", hold=False, runner=None):
    """Start a sampler's epochs in the sandbox; the function returned reads and checks them.
    For the submission, it checks len() and the partition of every epoch; with ``hold``,
    also that ``list(sampler)`` gives the same batches. ``runner``: a fresh process of the
    submission to run it in (default: the shared one, where the call goes out now and the
    case may begin others before it reads this one). It returns the batches of each
    epoch."""
    args = ("run_epochs", lengths, batch_size)
    options = {"shuffle": shuffle, "drop_last": drop_last, "seed": seed,
               "epochs": list(epochs), "kind": kind, **({"hold": True} if hold else {})}
    if runner is not None:
        value = runner.scenario(*args, **options)
        return lambda: read_epochs(t, value, lengths, batch_size, options, role)
    pending = (t.sub if role == "sub" else t.ref).begin_scenario(*args, **options)
    return lambda: read_epochs(t, pending.value, lengths, batch_size, options, role)


def read_epochs(t, value, lengths, batch_size, options, role):
    """The batches of each epoch :func:`begin_epochs` asked for, checked (see there)."""
    res = scenario_dict(t, value, ("len_before", "len_after", "epochs", "held"))
    shuffle, drop_last, seed = options["shuffle"], options["drop_last"], options["seed"]
    epochs, hold = options["epochs"], options.get("hold", False)
    n = len(lengths)
    at = where(N=n, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, seed=seed)
    if role == "sub":
        check_len(t, res["len_before"], n, batch_size, drop_last,
                  T("迭代之前的 len(sampler)", "len(sampler) before iterating"), at)
    out = []
    for epoch, rec in zip(epochs, res["epochs"], strict=False):
        batches = unpack(t, rec, after_epoch(at, epoch))
        if role == "sub":
            check_partition(t, batches, n, batch_size, drop_last, after_epoch(at, epoch))
        out.append(batches)
    if role == "sub":
        check_len(t, res["len_after"], n, batch_size, drop_last,
                  T("迭代之后的 len(sampler)", "len(sampler) after iterating"), at)
    held = res["held"] if hold else out
    if len(out) != len(epochs) or not isinstance(held, list) or len(held) != len(out):
        t.fail(T("场景返回的 epoch 数不对", "the scenario returned the wrong number of epochs"))
    for epoch, batches, rec in zip(epochs, out, held if hold else [], strict=False):
        at_epoch = after_epoch(at, epoch)
        expect_same_batches(t, unpack(t, rec, at_epoch), batches, lengths, "list(sampler)",
                            at_epoch, HINT_HELD)
    return out


def check_sorted_exact(t, lengths, batch_size, drop_last, **options):
    """shuffle=False: exactly the reference's batches (:func:`begin_sorted_exact`, then its
    answer at once); returns them."""
    return begin_sorted_exact(t, lengths, batch_size, drop_last, **options)()


def begin_sorted_exact(t, lengths, batch_size, drop_last, seeds=(0,), epochs=(0,), kind="list",
                       hold=False):
    """shuffle=False: exactly the reference's batches, whatever the seed and the epoch
    (with ``hold``, list(sampler)'s too). Both runners start now; the function returned
    checks what they answer and returns the reference's batches."""
    exp = begin_epochs(t, lengths, batch_size, shuffle=False, drop_last=drop_last, role="ref")
    got = [begin_epochs(t, lengths, batch_size, shuffle=False, drop_last=drop_last, seed=seed,
                        epochs=epochs, kind=kind, hold=hold) for seed in seeds]

    def finish():
        ref = None
        for seed, read in zip(seeds, got, strict=True):
            runs = read()  # the submission's errors first, seed by seed as they were
            ref = exp()[0] if ref is None else ref
            for epoch, batches in zip(epochs, runs, strict=True):
                at = where(N=len(lengths), batch_size=batch_size, shuffle=False,
                           drop_last=drop_last, seed=seed, epoch=epoch, lengths=kind)
                expect_same_batches(t, batches, ref, lengths, "list(sampler)", at,
                                    diagnose_sorted(batches, ref, lengths))
        return exp()[0] if ref is None else ref
    return finish


def ahead(*reads):
    """A hidden case's second part: ``yield from ahead(begin_...(...), ...)`` once its
    calls are out, so that the grader begins the next case while the runners compute
    (judge/pipeline.py); then each is read and checked, in order. Their answers."""
    yield
    return [read() for read in reads]


def check_dataloader(t, lengths, **options):
    """:func:`begin_dataloader`, then its check at once."""
    begin_dataloader(t, lengths, **options)()


def begin_dataloader(t, lengths, *, batch_size, seed, epochs, drop_last):
    """DataLoader(dataset, batch_sampler=sampler, collate_fn=...) delivers the sampler's
    batches, padded to each batch's longest; len(loader) is the number of batches. The
    scenario starts now; the function returned checks it."""
    pending = t.sub.begin_scenario("dataloader", lengths, batch_size, seed=seed, epochs=epochs,
                                   drop_last=drop_last)
    return lambda: read_dataloader(t, pending.value, lengths, batch_size, seed, epochs,
                                   drop_last)


def read_dataloader(t, value, lengths, batch_size, seed, epochs, drop_last):
    """What :func:`begin_dataloader` started, checked."""
    res = scenario_dict(t, value, ("is_sampler", "len_loader", "epochs"))
    n = len(lengths)
    at = where(N=n, batch_size=batch_size, drop_last=drop_last, seed=seed)
    t.expect(res["is_sampler"] is True, T("BucketBatchSampler 应当继承 torch.utils.data.Sampler",
                                          "BucketBatchSampler must subclass "
                                          "torch.utils.data.Sampler"))
    check_len(t, res["len_loader"], n, batch_size, drop_last, T.same("len(loader)"), at)
    for epoch, rec in zip(epochs, res["epochs"], strict=False):
        at_e = at + T(f"，epoch {epoch}", f", epoch {epoch}")
        rec = scenario_dict(t, rec, ("loader", "direct", "widths"))
        loaded, direct = unpack(t, rec["loader"], at_e), unpack(t, rec["direct"], at_e)
        check_partition(t, loaded, n, batch_size, drop_last, at_e)
        expect_same_batches(t, loaded, direct, lengths, "DataLoader", at_e,
                            T("DataLoader 拿到的批次应当和同一 epoch 直接迭代 sampler 得到的相同",
                              "the DataLoader must get the batches the sampler yields in the "
                              "same epoch"))
        widths = [max(int(lengths[i]) for i in b) for b in loaded]
        t.expect_equal(rec["widths"], torch.tensor(widths, dtype=torch.int64),
                       "padded widths (input_ids.shape[1])")


# ---------------------------------------------------------------- statistics


def batch_stats(batches, lengths):
    """Per batch, computed here from the indices: (mean length, longest, size)."""
    flat = torch.tensor([i for b in batches for i in b], dtype=torch.int64)
    sizes = torch.tensor([len(b) for b in batches], dtype=torch.int64)
    ids = torch.repeat_interleave(torch.arange(len(batches)), sizes)
    values = lengths[flat]
    sums = torch.zeros(len(batches), dtype=torch.int64).index_add_(0, ids, values)
    longest = torch.zeros(len(batches), dtype=torch.int64).scatter_reduce(
        0, ids, values, "amax", include_self=False)
    return sums.double() / sizes.clamp(min=1), longest, sizes


def padding_share(batches, lengths):
    """The grader's own padding ratio of some batches (never the submission's)."""
    _, longest, sizes = batch_stats(batches, lengths)
    padded = int((longest * sizes).sum())
    real = int(lengths[torch.tensor([i for b in batches for i in b], dtype=torch.int64)].sum())
    return (padded - real) / padded if padded else 0.0


def random_padding(t, lengths, batch_size, reps=3):
    """Padding ratio of plain random batching, averaged over a few permutations."""
    n, total = len(lengths), 0.0
    for _ in range(reps):
        perm = torch.randperm(n, generator=t.rng).tolist()
        total += padding_share([perm[i: i + batch_size] for i in range(0, n, batch_size)],
                               lengths)
    return total / reps


def rising_share(batches, lengths):
    """Among neighbouring batches whose mean lengths differ, the share where it rises.
    A random batch order gives 0.5 (±0.015 or so over a thousand batches); a sorted order
    1.0 (0.0 descending); sorted pools of P batches in a row, (P - 1) / P."""
    means = batch_stats(batches, lengths)[0]
    step = means[1:] - means[:-1]
    moving = int((step != 0).sum())
    return (float((step > 0).sum()) / moving if moving else 0.5), moving


def ranks(values):
    """Ranks 0..n-1 (ties in index order: enough for a correlation over thousands)."""
    out = torch.empty(len(values), dtype=torch.float64)
    out[torch.argsort(values, stable=True)] = torch.arange(len(values), dtype=torch.float64)
    return out


def trend(batches, lengths):
    """Spearman's rank correlation between a batch's position and its mean length: about 0
    (±0.03 over a thousand batches) for a random order, 1.0 for batches in length order, near
    1 for length buckets yielded one after another, shuffled inside or not."""
    means = batch_stats(batches, lengths)[0]
    if len(means) < 3:
        return 0.0
    pos, rk = torch.arange(len(means), dtype=torch.float64), ranks(means)
    pos, rk = pos - pos.mean(), rk - rk.mean()
    return float((pos * rk).sum() / (pos.norm() * rk.norm()))


def turning_share(batches, lengths):
    """Among batches whose mean length differs from both neighbours', the share that is a
    peak or a valley: 2/3 for a random order, about 2/P for sorted pools of P batches yielded
    in turn ascending and descending (a sawtooth the rising share cannot see)."""
    means = batch_stats(batches, lengths)[0]
    step = means[1:] - means[:-1]
    both = (step[:-1] != 0) & (step[1:] != 0)
    turns = (step[:-1] * step[1:] < 0) & both
    counted = int(both.sum())
    return (float(turns.sum()) / counted if counted else 2 / 3), counted


# ---------------------------------------------------------------- public cases

EXAMPLE_LENGTHS = [5, 2, 8, 2, 7, 3, 9, 1, 4, 2]


@case(public=True, zh="shuffle=False：按长度排序后切成批次",
      en="shuffle=False: sorted by length, then cut into batches")
def example_sorted(t):
    lengths = torch.tensor(EXAMPLE_LENGTHS)
    for drop_last in (False, True):
        batches = check_sorted_exact(t, lengths, 3, drop_last, hold=True)  # list(sampler)
        t.note(f"drop_last={drop_last}: {batches}", f"drop_last={drop_last}: {batches}")


@case(public=True, zh="shuffle=True：每个索引恰好一次，set_epoch 改变顺序",
      en="shuffle=True: every index once, set_epoch changes the order")
def example_shuffled(t):
    lengths = torch.tensor([(7 * i) % 31 + 1 for i in range(300)])
    e0, again, e1 = run_epochs(t, lengths, 16, seed=42, epochs=(0, None, 1))
    at = where(N=300, batch_size=16, seed=42)
    t.expect(e0 == again, T("同一个 epoch 迭代两次，批次应当完全相同",
                            "iterating the same epoch twice must give the same batches") + at)
    t.expect(e0 != e1, T("set_epoch(1) 之后的顺序应当和 epoch 0 不同",
                         "after set_epoch(1) the order must differ from epoch 0") + at)
    t.note(f"epoch 0, first two batches: {e0[:2]}", f"epoch 0, first two batches: {e0[:2]}")


@case(public=True, zh="padding_ratio 的例子", en="padding_ratio on an example")
def example_padding_ratio(t):
    lengths = [3, 1, 4, 1, 5]
    batches = [[0, 2], [1, 4], [3]]  # padded to 4, 5 and 1: 19 tokens, 5 of them padding
    t.expect_close(t.sub.padding_ratio(batches, lengths), t.ref.padding_ratio(batches, lengths),
                   "padding_ratio([[0, 2], [1, 4], [3]], [3, 1, 4, 1, 5])",
                   hint=T("填充数 / 填充后的全部 token 数，每批只填充到本批最长",
                          "padding / all tokens after padding, each batch to its own longest"))


@case(public=True, zh="配合 DataLoader 使用", en="used by a DataLoader")
def example_dataloader(t):
    lengths = torch.tensor([(5 * i) % 17 + 1 for i in range(50)])
    check_dataloader(t, lengths, batch_size=8, seed=1, epochs=[0, 1], drop_last=False)


# ---------------------------------------------------------------- hidden cases


@case(zh="shuffle=False 与参考解答完全一致（含并列）",
      en="shuffle=False equals the reference exactly (ties included)")
def sorted_exact(t):
    checks = []
    for _ in range(4):
        n = t.random.randint(30, 400)
        batch_size = t.random.choice([1, 2, 5, 8, 32, n - 1])
        checks.append(begin_sorted_exact(t, uniform_lengths(t, n), batch_size,
                                         t.random.random() < 0.5,
                                         seeds=(new_seed(t), new_seed(t)),
                                         epochs=(0, t.random.randint(1, 9))))
    yield from ahead(*checks)


@case(zh="drop_last=False：每个索引恰好一次，最多一个批次不满",
      en="drop_last=False: every index once, one short batch at most")
def keep_last_partition(t):
    reads = []
    for low, high in ((3, 10), (10, 40), (100, 400)):  # the last spans several pools
        batch_size = t.random.choice([3, 8, 16, 32])
        n = batch_size * t.random.randint(low, high) + t.random.randint(1, batch_size - 1)
        reads.append(begin_epochs(t, lognormal_lengths(t, n), batch_size, seed=new_seed(t),
                                  epochs=(t.random.randrange(10), t.random.randrange(10, 20))))
    yield from ahead(*reads)


@case(zh="drop_last=True：恰好 N // batch_size 个满批次",
      en="drop_last=True: exactly N // batch_size full batches")
def drop_last_partition(t):
    reads = []
    for low, high in ((3, 10), (10, 40), (100, 400)):
        batch_size = t.random.choice([3, 8, 16, 32])
        n = batch_size * t.random.randint(low, high) + t.random.randint(1, batch_size - 1)
        reads.append(begin_epochs(t, lognormal_lengths(t, n), batch_size, drop_last=True,
                                  seed=new_seed(t), epochs=(0, t.random.randrange(1, 20))))
    yield from ahead(*reads)


@case(zh="很小的数据集：N < batch_size、N == batch_size、batch_size=1、N=0",
      en="tiny datasets: N < batch_size, N == batch_size, batch_size 1, N = 0")
def tiny_datasets(t):
    b, reads = t.random.randint(4, 12), []
    for n, batch_size in [(b - 1, b), (b, b), (b + 1, b), (t.random.randint(5, 30), 1),
                          (1, 1), (0, b)]:
        lengths = uniform_lengths(t, n, high=20)
        for drop_last in (False, True):
            reads.append(begin_epochs(t, lengths, batch_size, drop_last=drop_last,
                                      seed=new_seed(t), epochs=(0, 1)))
            reads.append(begin_sorted_exact(t, lengths, batch_size, drop_last))
    yield from ahead(*reads)


@case(zh="相同的 (seed, epoch) 得到相同的批次", en="the same (seed, epoch) gives the same "
      "batches")
def reproducible(t):
    lengths, batch_size = lognormal_lengths(t, 3000), t.random.choice([8, 16, 32])
    seed, epoch = new_seed(t), t.random.randint(2, 30)
    at = where(N=3000, batch_size=batch_size, seed=seed)
    first = begin_epochs(t, lengths, batch_size, seed=seed, epochs=(0, 1, epoch, None))
    fresh = begin_epochs(t, lengths, batch_size, seed=seed, epochs=(epoch,))
    unset = begin_epochs(t, lengths, batch_size, seed=seed, epochs=(None,))
    yield
    first = first()
    expect_same_batches(t, first[3], first[2], lengths, f"set_epoch({epoch})", at, T(
        f"set_epoch({epoch}) 之后迭代两次，结果不同：同一个 (seed, epoch) 必须给出相同的批次"
        f"（是不是每次迭代都在消耗同一个长期存在的生成器？）",
        f"two iterations after set_epoch({epoch}) differ: the same (seed, epoch) must give the "
        f"same batches (does every iteration draw from one long-lived generator?)"))
    expect_same_batches(t, fresh()[0], first[2], lengths, f"set_epoch({epoch})", at, T(
        f"新建的 sampler 直接 set_epoch({epoch})，应当得到第一个 sampler 在 epoch {epoch} 的批次"
        f"（断点续训依赖这一点）", f"a new sampler after set_epoch({epoch}) must yield what the "
        f"first one yielded in epoch {epoch} (resuming a run depends on it)"))
    expect_same_batches(t, unset()[0], first[0], lengths, "epoch 0", at, T(
        "没有调用 set_epoch 时就是 epoch 0（和 DistributedSampler 一样）",
        "without a set_epoch call the epoch is 0 (as in DistributedSampler)"))


@case(zh="另一个进程（续训、数据并行的其他 rank）里相同的 (seed, epoch) 给出相同的批次",
      en="the same (seed, epoch) gives the same batches in another process (a resumed run, "
      "another rank)")
def other_process(t):
    """A fresh runner with another PYTHONHASHSEED: hash(str) differs there, as it does
    between the processes of a real run (forked warm: no second import of torch)."""
    lengths, batch_size = lognormal_lengths(t, 3000), t.random.choice([8, 16, 32])
    seed, epoch = new_seed(t), t.random.randint(0, 30)
    here = run_epochs(t, lengths, batch_size, seed=seed, epochs=(epoch,))[0]
    with t.fresh(other_hashes=True) as run:
        there = run_epochs(t, lengths, batch_size, seed=seed, epochs=(epoch,), runner=run)[0]
    expect_same_batches(t, there, here, lengths, f"set_epoch({epoch})",
                        where(N=3000, batch_size=batch_size, seed=seed), HINT_PROCESS)


@case(zh="list(sampler)：同时拿着所有批次", en="list(sampler): every batch held at once")
def held_together(t):
    reads = []
    for shuffle, drop_last in ((True, False), (True, True), (False, False)):
        batch_size = t.random.choice([4, 8, 16])
        n = batch_size * t.random.randint(5, 40) + t.random.randint(1, batch_size - 1)
        reads.append(begin_epochs(t, lognormal_lengths(t, n), batch_size, shuffle=shuffle,
                                  drop_last=drop_last, seed=new_seed(t),
                                  epochs=(t.random.randrange(10),), hold=True))
    yield from ahead(*reads)


@case(zh="set_epoch 改变批次顺序", en="set_epoch changes the order")
def epoch_changes_order(t):
    lengths, batch_size = lognormal_lengths(t, 2000), t.random.choice([8, 16])
    epochs = sorted(t.random.sample(range(50), 3))
    seeds = (0, new_seed(t))  # seed 0 is the default: seed * epoch would be 0 always
    reads = [begin_epochs(t, lengths, batch_size, seed=seed, epochs=epochs) for seed in seeds]
    yield
    for seed, read in zip(seeds, reads, strict=True):
        runs = read()
        for a in range(3):
            for b in range(a + 1, 3):
                t.expect(runs[a] != runs[b], T(
                    f"set_epoch({epochs[a]}) 和 set_epoch({epochs[b]}) 给出了完全相同的批次和"
                    f"顺序：生成器的种子要同时包含 seed 和 epoch", f"set_epoch({epochs[a]}) and "
                    f"set_epoch({epochs[b]}) gave exactly the same batches in the same order: "
                    f"seed the generator with both seed and epoch")
                    + where(N=2000, batch_size=batch_size, seed=seed))


@case(zh="不同的 seed 给出不同的顺序", en="a different seed gives a different order")
def seed_changes_order(t):
    lengths, batch_size = lognormal_lengths(t, 2000), t.random.choice([8, 16])
    seeds = t.random.sample(range(2**31), 3)
    epochs = (0, t.random.randrange(1, 10))  # epoch 0 too: seed * epoch is 0 there
    reads = [[begin_epochs(t, lengths, batch_size, seed=s, epochs=(epoch,)) for s in seeds]
             for epoch in epochs]
    yield
    for epoch, started in zip(epochs, reads, strict=True):
        runs = [read()[0] for read in started]
        for a in range(3):
            for b in range(a + 1, 3):
                t.expect(runs[a] != runs[b], T(
                    f"seed={seeds[a]} 和 seed={seeds[b]} 在 epoch {epoch} 给出了完全相同的批次和"
                    f"顺序：生成器的种子要包含 seed", f"seed={seeds[a]} and seed={seeds[b]} gave "
                    f"exactly the same batches in the same order in epoch {epoch}: seed the "
                    f"generator with seed too") + where(N=2000, batch_size=batch_size))


def begin_global_rng_runs(t):
    """Two runs of the same (seed, epoch), after seeding the global RNGs differently,
    started now; the function returned reads them: (runs, lengths, batch_size, at,
    global_seeds)."""
    lengths, batch_size = lognormal_lengths(t, 2000), t.random.choice([8, 16])
    seed, epoch = new_seed(t), t.random.randrange(10)
    global_seeds = t.random.sample(range(2**31), 2)
    pending = t.sub.begin_scenario("global_rng", lengths, batch_size, seed=seed, epoch=epoch,
                                   global_seeds=global_seeds)

    def read():
        runs = pending.value
        if not (isinstance(runs, list) and len(runs) == 2):
            t.fail(T("场景返回了无法识别的结果", "the scenario returned something unrecognisable"))
        runs = [scenario_dict(t, run, ("batches", "changed")) for run in runs]
        at = where(N=2000, batch_size=batch_size, seed=seed, epoch=epoch)
        return runs, lengths, batch_size, at, global_seeds
    return read


@case(zh="不改变全局随机数状态（torch、random、numpy）",
      en="the global RNG states (torch, random, numpy) are left unchanged")
def global_rng_untouched(t):
    [(runs, lengths, batch_size, at, _)] = yield from ahead(begin_global_rng_runs(t))
    for run in runs:
        check_partition(t, unpack(t, run["batches"], at), len(lengths), batch_size, False, at)
        t.expect(not run["changed"], T(
            f"构造并迭代 sampler 之后，全局随机数状态变了：{run['changed']}。请用自己的 "
            f"torch.Generator / numpy 的 Generator / random.Random；不要调用 torch.manual_seed、"
            f"不带 generator 的 torch.randperm(n)、random.shuffle 之类", f"building and "
            f"iterating the sampler changed the global RNG state of {run['changed']}. Use a "
            f"private torch.Generator / numpy Generator / random.Random; do not call "
            f"torch.manual_seed, torch.randperm(n) without a generator, random.shuffle and the "
            f"like") + at)


@case(zh="结果不依赖全局随机数", en="the result does not depend on the global RNGs")
def global_rng_not_used(t):
    [(runs, lengths, _, at, global_seeds)] = yield from ahead(begin_global_rng_runs(t))
    a, b = (unpack(t, run["batches"], at) for run in runs)
    expect_same_batches(t, b, a, lengths, "list(sampler)", at, T(
        f"全局随机数种子先后设为 {global_seeds[0]} 和 {global_seeds[1]}，结果变了：顺序只能由 "
        f"(seed, epoch) 决定", f"the global RNGs seeded with {global_seeds[0]}, then "
        f"{global_seeds[1]} changed the result: the order must depend on (seed, epoch) only"))


@case(zh="批次顺序不按长度排序（长短混合）",
      en="the batch order is not sorted by length (long and short batches mixed)")
def batches_mixed(t):
    lengths, batch_size, seed = lognormal_lengths(t, BIG_N), t.random.choice([16, 32]), new_seed(t)
    epochs = (t.random.randrange(5), t.random.randrange(5, 10))
    [runs] = yield from ahead(begin_epochs(t, lengths, batch_size, seed=seed, epochs=epochs))
    for epoch, batches in zip(epochs, runs, strict=True):
        share, moving = rising_share(batches, lengths)
        t.expect(MIXED[0] <= share <= MIXED[1], T(
            f"相邻两个批次里，后一个平均长度更长的占 {share:.2f}（共 {moving} 对）；"
            f"随机顺序约为 0.5，要求在 {MIXED[0]} 到 {MIXED[1]} 之间 —— "
            f"批次按长度（或在每个池子里按长度）依次产出，"
            f"模型就会先只看到短句、再只看到长句。排序切好批次之后，要把批次整体打乱",
            f"the next batch is longer on average than the one before in {share:.2f} of "
            f"{moving} neighbouring pairs; a random order gives about 0.5, and {MIXED[0]} to "
            f"{MIXED[1]} is required — batches yielded in length order (or in length order "
            f"inside each pool) feed the model all short sequences, then all long ones. After "
            f"sorting and cutting, shuffle the batches")
            + where(N=BIG_N, batch_size=batch_size, seed=seed, epoch=epoch))
        rho = trend(batches, lengths)
        t.expect(abs(rho) <= TREND, T(
            f"批次的位置和它的平均长度的秩相关系数是 {rho:+.2f}；随机顺序接近 0，要求在 "
            f"±{TREND} 以内 —— 整个 epoch 从短到长（或从长到短）：按长度分成几个桶、"
            f"一个桶接一个桶地产出也是这样，哪怕桶内打乱了。要把所有批次一起打乱",
            f"the rank correlation between a batch's position and its mean length is "
            f"{rho:+.2f}; a random order gives about 0, and within ±{TREND} is required — the "
            f"epoch runs from short to long (or long to short): length buckets yielded one "
            f"after another do this even when shuffled inside. Shuffle all the batches together")
            + where(N=BIG_N, batch_size=batch_size, seed=seed, epoch=epoch))
        turns, counted = turning_share(batches, lengths)
        t.expect(turns >= TURNS, T(
            f"只有 {turns:.2f} 的批次（共 {counted} 个）比两边的邻居都长或都短；随机顺序约为 "
            f"2/3，要求至少 {TURNS} —— 平均长度一段一段地单调上升、下降（锯齿），"
            f"比如每个池子排好序之后依次产出（哪怕方向交替）。排序切好批次之后，要把批次整体打乱",
            f"only {turns:.2f} of {counted} batches are longer or shorter than both neighbours; "
            f"a random order gives about 2/3, and at least {TURNS} is required — the mean "
            f"length rises and falls in long monotone runs (a sawtooth), as when sorted pools "
            f"are yielded in turn, even in alternating directions. After sorting and cutting, "
            f"shuffle the batches")
            + where(N=BIG_N, batch_size=batch_size, seed=seed, epoch=epoch))


@case(zh="分桶要真正减少填充（不超过随机分批的 40%）",
      en="bucketing pays off (at most 40% of random batching's padding)")
def padding_payoff(t):
    lengths, batch_size, seed = lognormal_lengths(t, BIG_N), t.random.choice([16, 32]), new_seed(t)
    epoch = t.random.randrange(10)
    [[batches]] = yield from ahead(begin_epochs(t, lengths, batch_size, seed=seed,
                                                epochs=(epoch,)))
    got, baseline = padding_share(batches, lengths), random_padding(t, lengths, batch_size)
    t.expect(got <= PAYOFF * baseline, T(
        f"这些批次的填充比例是 {got:.3f}，随机分批是 {baseline:.3f}，"
        f"只降到了 {got / baseline:.0%}，要求不超过 {PAYOFF:.0%} —— "
        f"先按长度排序再切批次（例如在约 50–100 个批次大小的池子里排序）；"
        f"如果已经排序了，检查池子是不是太小、加的噪声是不是太大"
        f"（长度 × uniform(0.9, 1.1) 就够了）",
        f"these batches pad {got:.3f} of their tokens and random batching {baseline:.3f}: "
        f"{got / baseline:.0%} of it, at most {PAYOFF:.0%} is required — sort by length before "
        f"cutting batches (for example inside pools of about 50–100 batches); if you do sort, "
        f"check that the pools are not too small and the noise not too large (length × "
        f"uniform(0.9, 1.1) is plenty)")
        + where(lengths="log-normal", N=BIG_N, batch_size=batch_size, seed=seed, epoch=epoch))


@case(zh="padding_ratio 的数值", en="padding_ratio values")
def padding_ratio_values(t):
    calls = []
    for _ in range(5):
        n = t.random.randint(2, 300)
        lengths = uniform_lengths(t, n, high=t.random.choice([3, 50, 1000])).tolist()
        perm = torch.randperm(n, generator=t.rng).tolist()
        cuts = sorted(t.random.sample(range(1, n), min(n - 1, t.random.randint(0, 12))))
        batches = [perm[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
        calls.append((t.ref.begin("padding_ratio", batches, lengths),
                      t.sub.begin("padding_ratio", batches, lengths), len(batches), n))
    yield
    for exp, got, count, n in calls:
        t.expect_close(got.value, exp.value, "padding_ratio(batches, lengths)",
                       rtol=1e-6, atol=1e-9, hint=T(
                           "填充数 / 填充后的全部 token 数（含填充），每批只填充到本批最长；返回 "
                           "Python float", "padding / all tokens after padding (padding "
                           "included), each batch only to its own longest; return a Python "
                           "float") + where(batches=count, N=n))


@case(zh="没有 token 时 padding_ratio 为 0.0", en="padding_ratio is 0.0 when there are no tokens")
def padding_ratio_no_tokens(t):
    n = t.random.randint(2, 20)
    split = t.random.randint(1, n - 1)
    calls = [(t.sub.begin("padding_ratio", batches, [0] * n), text)
             for batches, text in (([], "batches=[]"), ([list(range(split)),
                                                         list(range(split, n))],
                                                        "all lengths are 0"))]
    yield
    for got, text in calls:
        t.expect_close(got.value, 0.0, f"padding_ratio ({text})",
                       atol=0.0, hint=T("没有任何 token 时返回 0.0：不是 NaN，也不要抛出异常",
                                        "with no tokens at all return 0.0: not NaN, and do not "
                                        "raise"))


@case(zh="lengths 是 tuple 或一维张量", en="lengths given as a tuple or a 1-D tensor")
def lengths_types(t):
    n, batch_size = t.random.randint(50, 300), t.random.choice([4, 8])
    lengths = uniform_lengths(t, n, high=40)
    reads = []
    for kind in ("tuple", "tensor"):
        reads.append(begin_sorted_exact(t, lengths, batch_size, False, kind=kind))
        reads.append(begin_epochs(t, lengths, batch_size, seed=new_seed(t), epochs=(0, 1),
                                  kind=kind))
    batches = [[i for i in range(n) if i % 3 == r] for r in range(3)]
    got = t.sub.begin("padding_ratio", batches, lengths)
    exp = t.ref.begin("padding_ratio", batches, lengths.tolist())
    yield from ahead(*reads)
    t.expect_close(got.value, exp.value,
                   "padding_ratio(batches, lengths as a tensor)", rtol=1e-6, atol=1e-9,
                   hint=T("lengths 是张量时，值要和列表时一样，并且返回 Python float"
                          "（float(...) 或 .item()）", "with a tensor of lengths, the value must "
                          "be the same as with a list, returned as a Python float (float(...) "
                          "or .item())"))


@case(zh="配合 DataLoader，多个 epoch", en="a DataLoader over several epochs")
def dataloader_epochs(t):
    batch_size = t.random.choice([4, 8, 16])
    n = t.random.randint(3, 20) * batch_size + t.random.randint(1, batch_size - 1)
    yield from ahead(*(begin_dataloader(t, lognormal_lengths(t, n), batch_size=batch_size,
                                        seed=new_seed(t), epochs=[0, t.random.randint(1, 9)],
                                        drop_last=drop_last) for drop_last in (False, True)))


@case(zh="batch_size < 1 时抛出 ValueError", en="ValueError when batch_size < 1")
def invalid_batch_size(t):
    for bad in (0, -t.random.randint(1, 8)):
        t.expect_raises("ValueError", lambda bad=bad: t.sub.scenario(
            "run_epochs", torch.tensor([3, 1, 2]), bad, epochs=[]),
            f"BucketBatchSampler([3, 1, 2], batch_size={bad})")


# ---------------------------------------------------------------- throughput


@workload
def large_epoch(device):
    """One epoch over 100,000 log-normal lengths, construction included (a million cost
    ten times as long and rated the fixtures alike). Every timed result is checked: every
    index once, full batches but one, len() right, and a padding ratio that shows real
    bucketing."""
    n, batch_size = 100_000, 32
    last = {}  # the inputs of the call being checked (make and check alternate)

    def make(rng):
        mu = 4.0 + float(torch.rand((), generator=rng))
        lengths = torch.exp(mu + 0.8 * torch.randn(n, generator=rng)).ceil().clamp(1, 16384)
        last["lengths"] = lengths.long()
        # Random batching's padding, the bar for bucketing (n is a multiple of batch_size).
        shuffled = last["lengths"][torch.randperm(n, generator=rng)].view(-1, batch_size)
        last["random"] = padding_of(shuffled.amax(dim=1), batch_size, int(last["lengths"].sum()))
        seed = int(torch.randint(0, 2**31, (), generator=rng))
        epoch = int(torch.randint(0, 100, (), generator=rng))
        return [last["lengths"], batch_size, seed, epoch], {}

    def check(got, expected):
        return check_epoch(got, last["lengths"], batch_size, last["random"])

    return Workload(fn="one_epoch", target="fixture", prepare="prepare_epoch", make=make,
                    check=check, warmup=1)


def padding_of(longest, sizes, real):
    padded = int((longest * sizes).sum())
    return (padded - real) / padded


def check_epoch(got, lengths, batch_size, baseline):
    """True for a right epoch of the timed workload, else what is wrong (both languages)."""
    if not (isinstance(got, dict) and isinstance(got.get("flat"), torch.Tensor)
            and isinstance(got.get("sizes"), torch.Tensor)
            and got["flat"].dtype == got["sizes"].dtype == torch.int64):
        return T("结果不完整", "the result is incomplete")
    flat, sizes, n = got["flat"], got["sizes"], len(lengths)
    count = n_batches(n, batch_size, False)
    if got.get("len") != count or len(sizes) != count:
        return T(f"期望 {count} 个批次；len() 为 {got.get('len')}，实际产出 {len(sizes)} 个",
                 f"expected {count} batches; len() says {got.get('len')}, {len(sizes)} came")
    if (len(flat) != n or int(flat.min()) < 0 or int(flat.max()) >= n
            or not bool((torch.bincount(flat, minlength=n) == 1).all())):
        return T("没有把每个索引恰好产出一次", "not every index came exactly once")
    if int((sizes != batch_size).sum()) > 1 or int(sizes.min()) < 1:
        return T("不止一个批次不满", "more than one batch is short")
    ids = torch.repeat_interleave(torch.arange(count), sizes)
    longest = torch.zeros(count, dtype=torch.int64).scatter_reduce(
        0, ids, lengths[flat], "amax", include_self=False)
    share = padding_of(longest, sizes, int(lengths.sum()))
    if share > PAYOFF * baseline:
        return T(f"填充比例 {share:.3f}，随机分批为 {baseline:.3f}：没有真正分桶",
                 f"padding ratio {share:.3f} against {baseline:.3f} for random batches: no "
                 f"real bucketing")
    return True
