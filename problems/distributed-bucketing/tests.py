"""Tests for distributed-bucketing. Public cases first; hidden ones draw fresh inputs per seed.

fixture.py builds one sampler per simulated rank inside the sandbox and iterates them;
what comes back is checked here against the contract: every rank the same number of full
batches, no index on two ranks, ranks in step (balance), the padding payoff, determinism
in (seed, epoch), a step order that is not sorted, the global RNGs untouched. A correct
solution's free choices are never tested: which indices share a batch, which rank gets
which batch of a step, which samples sit out, the pool size or the noise, the order inside
a batch, and how the private RNG is seeded from (seed, epoch).
"""

import torch

from judge.i18n import T
from judge.testing import case, workload
from judge.throughput import Workload

BALANCE = 1.25  # mean over steps of max/mean of the ranks' longest (random batching: ~2)
PAYOFF = 0.4  # bucketed padding: at most this share of random batching's padding
MIXED = (0.3, 0.7)  # allowed share of rising steps (a random order: 0.5)
TREND = 0.25  # |rank correlation| of a step's position and its mean length (random: ~0)
TURNS = 0.5  # least share of peaks and valleys among steps (random: 2/3)
BIG_N = 40_000  # epoch size of the statistical cases


# ---------------------------------------------------------------- inputs


def lognormal_lengths(t, n):
    """Heavy-tailed lengths: ln L ~ N(mu, sigma^2), mu in [4, 5], sigma in [0.7, 0.9]."""
    mu, sigma = t.random.uniform(4.0, 5.0), t.random.uniform(0.7, 0.9)
    x = torch.exp(mu + sigma * torch.randn(n, generator=t.rng, dtype=torch.float64))
    return x.ceil().clamp(1, 16384).long()


def uniform_lengths(t, n, high=12):
    """Short lengths with many ties (zeros included)."""
    return torch.randint(0, high + 1, (n,), generator=t.rng)


def new_seed(t):
    return t.random.randrange(2**31)


def steps_of(n, batch_size, num_replicas):
    return n // (num_replicas * batch_size)


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


def unrecognisable(t, at=None):
    t.fail(T("场景返回了无法识别的结果", "the scenario returned something unrecognisable")
           + (at if at is not None else T("", "")))


# ---------------------------------------------------------------- what came back


def scenario_dict(t, res, keys):
    """A scenario's result, checked for shape (it ran next to the submission)."""
    if not (isinstance(res, dict) and all(k in res for k in keys)):
        unrecognisable(t)
    return res


def unpack(t, rec, at):
    """A recorded epoch ({"flat", "sizes"}) as a list of batches, or the case fails."""
    if isinstance(rec, dict) and isinstance(rec.get("bad"), dict):
        t.fail(describe_bad(rec["bad"]) + at)
    # Built in the submission's process, which may have patched the fixture: anything but
    # two 1-d int64 tensors of consistent sizes is the submission's doing.
    flat, sizes = (rec.get("flat"), rec.get("sizes")) if isinstance(rec, dict) else (None, None)
    if not (isinstance(flat, torch.Tensor) and isinstance(sizes, torch.Tensor)
            and flat.dtype == sizes.dtype == torch.int64 and flat.dim() == sizes.dim() == 1
            and bool((sizes >= 0).all()) and int(sizes.sum()) == flat.numel()):
        unrecognisable(t, at)
    flat, batches, pos = rec["flat"].tolist(), [], 0
    for size in rec["sizes"].tolist():
        batches.append(flat[pos: pos + size])
        pos += size
    return batches


# ---------------------------------------------------------------- contract checks


def check_len(t, got, rank, n, batch_size, num_replicas, when, at):
    expected = steps_of(n, batch_size, num_replicas)
    if got != expected:
        t.fail(T(f"rank {rank} 的 len(sampler)（{when.zh}）：期望 "
                 f"N // (num_replicas × batch_size) = {n} // ({num_replicas} × {batch_size}) "
                 f"= {expected}，得到 {got}",
                 f"len(sampler) of rank {rank} ({when.en}): expected N // (num_replicas × "
                 f"batch_size) = {n} // ({num_replicas} × {batch_size}) = {expected}, got {got}")
               + T(" —— 每个 rank 的 len 都一样，而且等于它实际产出的批次数",
                   " — it is the same on every rank, and the number of batches each yields")
               + at)


def check_counts(t, per_rank, n, batch_size, num_replicas, at):
    """Every rank: exactly N // (R * B) batches of exactly B indices in 0..N-1."""
    expected = steps_of(n, batch_size, num_replicas)
    counts = [len(b) for b in per_rank]
    if any(c != expected for c in counts):
        rank = next(r for r, c in enumerate(counts) if c != expected)
        t.fail(T(f"各 rank 产出的批次数是 {counts}，每个 rank 都应当恰好是 N // (num_replicas × "
                 f"batch_size) = {expected}（rank {rank} 不对）—— 批次数不一样的话，多出来的那个 "
                 f"rank 会在 all-reduce 里永远等其他 rank：训练卡死。多出来的样本要轮空",
                 f"the ranks yielded {counts} batches; every rank must yield exactly N // "
                 f"(num_replicas × batch_size) = {expected} (rank {rank} does not) — with uneven "
                 f"counts the rank with an extra batch waits forever in its all-reduce: "
                 f"training hangs. Leftover samples sit out") + at)
    for r, batches in enumerate(per_rank):
        for k, batch in enumerate(batches):
            if len(batch) != batch_size:
                t.fail(T(f"rank {r} 的第 {k} 个批次有 {len(batch)} 个索引，每个批次都应当恰好有 "
                         f"batch_size={batch_size} 个（凑不满一步的样本轮空，不要产出不满的批次）",
                         f"batch {k} of rank {r} holds {len(batch)} indices; every batch must "
                         f"hold exactly batch_size={batch_size} (samples that do not fill a "
                         f"step sit out: never yield a short batch)") + at)
            bad = next((i for i in batch if not 0 <= i < n), None)
            if bad is not None:
                t.fail(T(f"rank {r} 的第 {k} 个批次里的索引 {bad} 越界（应在 0..{n - 1}）",
                         f"batch {k} of rank {r} holds index {bad}, outside 0..{n - 1}") + at)


def check_disjoint(t, per_rank, n, at):
    """No index twice in an epoch, on one rank or across ranks."""
    flat = [i for batches in per_rank for b in batches for i in b]
    if not flat:
        return
    counts = torch.bincount(torch.tensor(flat, dtype=torch.int64), minlength=n)
    if not bool((counts > 1).any()):
        return
    dup = int((counts > 1).nonzero()[0])
    seen = [(r, k) for r, batches in enumerate(per_rank) for k, b in enumerate(batches)
            if dup in b][:3]
    places = ", ".join(f"rank {r} batch {k}" for r, k in seen)
    if len({r for r, _ in seen}) > 1:
        t.fail(T(f"索引 {dup} 出现在好几个 rank 上（{places}）：各 rank 的数据重叠了 —— "
                 f"每个 rank 都要用只由 (seed, epoch) 决定的同一个生成器算出同一个全局顺序，"
                 f"再各取自己那一份；"
                 f"不要把 rank 放进种子", f"index {dup} comes out on several ranks ({places}): the "
                 f"ranks overlap — every rank must compute the same global order from a "
                 f"generator seeded with (seed, epoch) only, then take its own share of it; "
                 f"never put the rank into the seed") + at)
    t.fail(T(f"索引 {dup} 在一个 epoch 里出现了 {int(counts[dup])} 次（{places}）",
             f"index {dup} appears {int(counts[dup])} times in one epoch ({places})") + at)


def run_ranks(t, lengths, batch_size, num_replicas, *, seed=0, epochs=(0,), kind="list",
              ranks=None, role="sub", fresh=None):
    """Build the ranks' samplers in the sandbox (``ranks``: which, in that order) and iterate
    ``epochs`` (None: iterate again without set_epoch). For the submission, check len() and
    every epoch's counts and disjointness. Returns, per epoch, the batches of each rank in
    ``ranks`` order."""
    proxy = fresh if fresh is not None else (t.sub if role == "sub" else t.ref)
    order = list(range(num_replicas)) if ranks is None else list(ranks)
    if fresh is not None:
        stream = fresh.stream("run_ranks", lengths, batch_size, num_replicas, seed=seed,
                              epochs=list(epochs), kind=kind, ranks=order)
        for _ in stream:
            pass
        res = stream.result.value if stream.result is not None else None
    else:
        res = proxy.scenario("run_ranks", lengths, batch_size, num_replicas, seed=seed,
                             epochs=list(epochs), kind=kind, ranks=order)
    res = scenario_dict(t, res, ("len_before", "len_after", "epochs"))
    n = len(lengths)
    at = where(N=n, batch_size=batch_size, num_replicas=num_replicas, seed=seed)
    if not (isinstance(res["epochs"], list) and len(res["epochs"]) == len(epochs)
            and all(isinstance(e, list) and len(e) == len(order) for e in res["epochs"])
            and isinstance(res["len_before"], list) and len(res["len_before"]) == len(order)):
        unrecognisable(t, at)
    if role == "sub":
        for rank, got in zip(order, res["len_before"], strict=True):
            check_len(t, got, rank, n, batch_size, num_replicas,
                      T("迭代之前", "before iterating"), at)
    out = []
    for epoch, recs in zip(epochs, res["epochs"], strict=True):
        at_epoch = at + (T(f"，set_epoch({epoch}) 之后", f", after set_epoch({epoch})")
                         if epoch is not None else T("，再迭代一次", ", iterated again"))
        per_rank = [unpack(t, rec, at_epoch + T(f"，rank {r}", f", rank {r}"))
                    for r, rec in zip(order, recs, strict=True)]
        if role == "sub" and len(order) == num_replicas:
            by_rank = [per_rank[order.index(r)] for r in range(num_replicas)]
            check_counts(t, by_rank, n, batch_size, num_replicas, at_epoch)
            check_disjoint(t, by_rank, n, at_epoch)
        out.append(per_rank)
    if role == "sub":
        for rank, got in zip(order, res["len_after"], strict=True):
            check_len(t, got, rank, n, batch_size, num_replicas,
                      T("迭代之后", "after iterating"), at)
    return out


def first_difference(got, exp):
    """(rank, batch) of the first difference between two per-rank epochs, or None."""
    for r, (g, e) in enumerate(zip(got, exp, strict=True)):
        if g != e:
            k = next((k for k, (a, b) in enumerate(zip(g, e, strict=False)) if a != b),
                     min(len(g), len(e)))
            return r, k
    return None


def expect_same(t, got, exp, lengths, what, at, hint, ranks=None):
    """The same batches, rank by rank; else name the first that differs."""
    diff = first_difference(got, exp)
    if diff is None:
        return
    r, k = diff
    rank = ranks[r] if ranks is not None else r
    g = got[r][k] if k < len(got[r]) else None
    e = exp[r][k] if k < len(exp[r]) else None
    problem = T(f"{what}：rank {rank} 的第 {k} 个批次，期望 ", f"{what}: batch {k} of rank {rank}, "
                f"expected ")
    problem = problem + (shown(e, lengths) if e is not None else T("没有这个批次", "no batch"))
    problem = problem + T("，得到 ", ", got ") + (shown(g, lengths) if g is not None
                                                else T("没有这个批次", "no batch"))
    t.fail(problem + T(" —— ", " — ") + hint + at)


# ---------------------------------------------------------------- statistics


def step_longest(per_rank, lengths):
    """[steps, ranks]: the longest length of each rank's batch at each step."""
    ids = torch.tensor([[b for b in batches] for batches in per_rank], dtype=torch.int64)
    return lengths[ids].amax(dim=2).t().double()  # ids: [ranks, steps, B]


def balance(longest):
    """Mean over steps of (max over ranks / mean over ranks) of the batches' longest."""
    return float((longest.amax(dim=1) / longest.mean(dim=1)).mean())


def random_balance(t, lengths, batch_size, num_replicas, reps=3):
    """The balance of plain random batching (a DistributedSampler and a BatchSampler)."""
    n, total = len(lengths), 0.0
    steps = steps_of(n, batch_size, num_replicas)
    for _ in range(reps):
        perm = torch.randperm(n, generator=t.rng)[: steps * num_replicas * batch_size]
        longest = lengths[perm.view(steps, num_replicas, batch_size)].amax(dim=2).double()
        total += balance(longest)
    return total / reps


def padding_share(ids, lengths):
    """The grader's own padding ratio of equal-sized batches ([batches, B] indices)."""
    values = lengths[ids]
    padded = int(values.amax(dim=1).sum()) * ids.shape[1]
    return (padded - int(values.sum())) / padded if padded else 0.0


def random_padding(t, lengths, batch_size, reps=3):
    n, total = len(lengths), 0.0
    for _ in range(reps):
        perm = torch.randperm(n, generator=t.rng)[: n - n % batch_size]
        total += padding_share(perm.view(-1, batch_size), lengths)
    return total / reps


def step_means(per_rank, lengths):
    """The mean length of each step (all ranks' batches of that step together)."""
    ids = torch.tensor(per_rank, dtype=torch.int64)  # [ranks, steps, B]
    return lengths[ids].double().mean(dim=(0, 2))


def rising_share(means):
    """Among neighbouring steps whose mean lengths differ, the share where it rises: 0.5 for
    a random order, 1.0 for steps in length order, (P - 1) / P for sorted pools of P steps."""
    step = means[1:] - means[:-1]
    moving = int((step != 0).sum())
    return (float((step > 0).sum()) / moving if moving else 0.5), moving


def trend(means):
    """Spearman's rank correlation between a step's position and its mean length: about 0
    (±0.03 over a thousand steps) for a random order, near 1 for steps in length order."""
    if len(means) < 3:
        return 0.0
    rk = torch.empty(len(means), dtype=torch.float64)
    rk[torch.argsort(means, stable=True)] = torch.arange(len(means), dtype=torch.float64)
    pos = torch.arange(len(means), dtype=torch.float64)
    pos, rk = pos - pos.mean(), rk - rk.mean()
    return float((pos * rk).sum() / (pos.norm() * rk.norm()))


def turning_share(means):
    """Among steps whose mean differs from both neighbours', the share that is a peak or a
    valley: 2/3 for a random order, about 2/P for sorted pools of P steps in turn."""
    step = means[1:] - means[:-1]
    both = (step[:-1] != 0) & (step[1:] != 0)
    turns = (step[:-1] * step[1:] < 0) & both
    counted = int(both.sum())
    return (float(turns.sum()) / counted if counted else 2 / 3), counted


def imbalance_hint(per_rank, lengths):
    """Why the ranks are out of step: one rank always longer (the sorted order split by
    rank), or unrelated batches at each step (ranks bucketing on their own)."""
    values = [lengths[torch.tensor(b, dtype=torch.int64).flatten()].double() for b in per_rank]
    means = [float(v.mean()) for v in values]
    low, high = values[means.index(min(means))], values[means.index(max(means))]
    # Split by rank: the shortest rank's long samples are shorter than the longest rank's
    # short ones (their length ranges hardly overlap).
    if float(torch.quantile(low, 0.9)) <= float(torch.quantile(high, 0.1)):
        shown_means = ", ".join(f"{m:.0f}" for m in means)
        return T(f"各 rank 的平均长度是 [{shown_means}]：总是同一个 rank 拿到长批次，"
                 f"像是把排好序的索引按 rank 切成了几段。应当把排好序的索引切成一步一步"
                 f"（每步 num_replicas × batch_size 个），每一步给每个 rank 一个批次",
                 f"the ranks' mean lengths are [{shown_means}]: the same rank always gets the "
                 f"long batches, as when the sorted order is cut into one slice per rank. Cut "
                 f"the sorted order into steps of num_replicas × batch_size indices instead, "
                 f"and give every rank one batch of each step")
    return T("同一步里各 rank 的批次来自长度分布里毫不相关的位置：是不是每个 rank 各自分桶、"
             "各自打乱，或者把打乱后的批次轮流发给各个 rank？应当按长度排序后切成一步一步"
             "（每步 num_replicas × batch_size 个索引），每个 rank 拿每一步里的一个批次，"
             "再用每个 rank 都相同的生成器打乱整步的顺序；如果在池子里排序，池子要够大"
             "（至少约 50 步）",
             "at each step the ranks' batches come from unrelated parts of the length "
             "distribution: does each rank bucket and shuffle on its own, or are shuffled "
             "batches dealt to the ranks in turn? Sort by length, cut into steps of "
             "num_replicas × batch_size indices, give each rank one batch of every step, and "
             "shuffle whole steps with a generator that is the same on every rank; if you sort "
             "in pools, make them large (about 50 steps or more)")


# ---------------------------------------------------------------- public cases

EXAMPLE_LENGTHS = [(7 * i) % 23 + 1 for i in range(50)]


@case(public=True, zh="2 个 rank：批次数相同、互不重叠", en="2 ranks: equal counts, no overlap")
def example_two_ranks(t):
    lengths = torch.tensor(EXAMPLE_LENGTHS)
    (per_rank,) = run_ranks(t, lengths, 4, 2, seed=3, epochs=(0,))
    for r, batches in enumerate(per_rank):
        t.note(f"rank {r}: {batches}", f"rank {r}: {batches}")
    left = sorted(set(range(50)) - {i for b in per_rank for bb in b for i in bb})
    t.note(f"轮空的索引: {left}", f"left out: {left}")


@case(public=True, zh="相同的 (seed, epoch) 得到相同的批次；set_epoch 改变顺序",
      en="the same (seed, epoch) gives the same batches; set_epoch changes them")
def example_epochs(t):
    lengths = torch.tensor([(11 * i) % 37 + 1 for i in range(400)])
    e0, again, e1 = run_ranks(t, lengths, 8, 4, seed=42, epochs=(0, None, 1))
    at = where(N=400, batch_size=8, num_replicas=4, seed=42)
    expect_same(t, again, e0, lengths, "epoch 0", at, T(
        "同一个 epoch 迭代两次，批次应当完全相同", "iterating the same epoch twice must give the "
        "same batches"))
    t.expect(e0 != e1, T("set_epoch(1) 之后的批次应当和 epoch 0 不同："
                         "生成器的种子要同时包含 seed 和 epoch",
                         "after set_epoch(1) the batches must differ from epoch 0: seed the "
                         "generator with both seed and epoch") + at)


@case(public=True, zh="配合 DataLoader 使用", en="used by a DataLoader")
def example_dataloader(t):
    lengths = torch.tensor([(5 * i) % 17 + 1 for i in range(90)])
    check_dataloader(t, lengths, batch_size=4, num_replicas=3, rank=1, seed=1, epochs=[0, 1])


def check_dataloader(t, lengths, *, batch_size, num_replicas, rank, seed, epochs):
    """DataLoader(dataset, batch_sampler=sampler, collate_fn=...) of one rank delivers the
    sampler's batches, padded to each batch's longest; len(loader) is the number of steps."""
    res = scenario_dict(t, t.sub.scenario("dataloader", lengths, batch_size, num_replicas,
                                          rank, seed=seed, epochs=epochs),
                        ("is_sampler", "len_loader", "epochs"))
    n = len(lengths)
    at = where(N=n, batch_size=batch_size, num_replicas=num_replicas, rank=rank, seed=seed)
    t.expect(res["is_sampler"] is True, T(
        "DistributedBucketSampler 应当继承 torch.utils.data.Sampler",
        "DistributedBucketSampler must subclass torch.utils.data.Sampler"))
    check_len(t, res["len_loader"], rank, n, batch_size, num_replicas, T("len(loader)",
                                                                        "len(loader)"), at)
    if not (isinstance(res["epochs"], list) and len(res["epochs"]) == len(epochs)):
        unrecognisable(t, at)
    for epoch, rec in zip(epochs, res["epochs"], strict=True):
        at_e = at + T(f"，epoch {epoch}", f", epoch {epoch}")
        rec = scenario_dict(t, rec, ("loader", "direct", "widths"))
        loaded, direct = unpack(t, rec["loader"], at_e), unpack(t, rec["direct"], at_e)
        expect_same(t, [loaded], [direct], lengths, "DataLoader", at_e, T(
            "DataLoader 拿到的批次应当和同一 epoch 直接迭代 sampler 得到的相同",
            "the DataLoader must get the batches the sampler yields in the same epoch"),
            ranks=[rank])
        t.expect(len(loaded) == steps_of(n, batch_size, num_replicas), T(
            f"DataLoader 产出了 {len(loaded)} 个批次，期望 {steps_of(n, batch_size, num_replicas)}",
            f"the DataLoader delivered {len(loaded)} batches, expected "
            f"{steps_of(n, batch_size, num_replicas)}") + at_e)
        widths = [max(int(lengths[i]) for i in b) for b in loaded]
        t.expect_equal(rec["widths"], torch.tensor(widths, dtype=torch.int64),
                       "padded widths (input_ids.shape[1])")


# ---------------------------------------------------------------- hidden cases


@case(zh="每个 rank 的批次数相同，每批恰好 batch_size 个",
      en="every rank yields the same number of full batches")
def equal_counts(t):
    for num_replicas in (2, 3, t.random.choice([4, 5, 8])):
        batch_size = t.random.choice([1, 3, 8, 16])
        per_step = num_replicas * batch_size
        n = per_step * t.random.randint(5, 60) + t.random.randint(1, per_step - 1) \
            if per_step > 1 else t.random.randint(20, 200)
        run_ranks(t, lognormal_lengths(t, n), batch_size, num_replicas, seed=new_seed(t),
                  epochs=(t.random.randrange(10), t.random.randrange(10, 20)))


@case(zh="各 rank 互不重叠，最多 num_replicas × batch_size − 1 个索引轮空",
      en="no index on two ranks; at most num_replicas × batch_size − 1 left out")
def ranks_disjoint(t):
    for _ in range(3):
        num_replicas, batch_size = t.random.choice([2, 4, 6, 8]), t.random.choice([4, 8, 32])
        per_step = num_replicas * batch_size
        n = per_step * t.random.randint(20, 120) + t.random.randint(0, per_step - 1)
        lengths = lognormal_lengths(t, n)
        (per_rank,) = run_ranks(t, lengths, batch_size, num_replicas, seed=new_seed(t),
                                epochs=(t.random.randrange(50),))
        used = sum(len(b) for batches in per_rank for b in batches)
        t.expect(n - used <= per_step - 1, T(
            f"{n - used} 个索引轮空，最多只能轮空 num_replicas × batch_size − 1 = "
            f"{per_step - 1} 个",
            f"{n - used} indices sit out; at most num_replicas × batch_size − 1 = "
            f"{per_step - 1} may") + where(N=n, batch_size=batch_size, num_replicas=num_replicas))


@case(zh="很小的数据集：N < num_replicas × batch_size、恰好一步、batch_size=1、一个 rank、N=0",
      en="tiny datasets: N < num_replicas × batch_size, one step, batch_size 1, one rank, N = 0")
def tiny_datasets(t):
    r, b = t.random.randint(2, 4), t.random.randint(2, 6)
    for n, batch_size, num_replicas in [(r * b - 1, b, r), (r * b, b, r), (r * b + 1, b, r),
                                        (t.random.randint(5, 30), 1, r),
                                        (t.random.randint(5, 30), b, 1), (1, 1, 1), (0, b, r)]:
        run_ranks(t, uniform_lengths(t, n, high=20), batch_size, num_replicas,
                  seed=new_seed(t), epochs=(0, 1))


@case(zh="各 rank 步调一致：同一步的批次长度相近（max/mean ≤ 1.25）",
      en="ranks stay in step: a step's batches have similar lengths (max/mean ≤ 1.25)")
def ranks_in_step(t):
    for num_replicas in (4, 8):
        batch_size, seed = t.random.choice([8, 16, 32]), new_seed(t)
        epoch = t.random.randrange(20)
        lengths = lognormal_lengths(t, BIG_N)
        (per_rank,) = run_ranks(t, lengths, batch_size, num_replicas, seed=seed, epochs=(epoch,))
        got = balance(step_longest(per_rank, lengths))
        baseline = random_balance(t, lengths, batch_size, num_replicas)
        t.expect(got <= BALANCE, T(
            f"每一步里各 rank 批次最长长度的 max / mean，对所有步取平均是 {got:.2f}"
            f"（随机分批约为 {baseline:.2f}），要求不超过 {BALANCE} —— "
            f"每一步的时间取决于最慢的那个 rank，其余 rank 都在 all-reduce 里等它。",
            f"max / mean over the ranks of their batches' longest "
            f"length, averaged over the steps, is {got:.2f} (random batching: about "
            f"{baseline:.2f}); at most {BALANCE} is required — a step takes as long as its "
            f"slowest rank, and the others wait for it in the all-reduce. ")
            + imbalance_hint(per_rank, lengths)
            + where(lengths="log-normal", N=BIG_N, batch_size=batch_size,
                    num_replicas=num_replicas, seed=seed, epoch=epoch))


@case(zh="分桶要真正减少填充（不超过随机分批的 40%）",
      en="bucketing pays off (at most 40% of random batching's padding)")
def padding_payoff(t):
    num_replicas, batch_size = t.random.choice([2, 4, 8]), t.random.choice([16, 32])
    seed, epoch = new_seed(t), t.random.randrange(20)
    lengths = lognormal_lengths(t, BIG_N)
    (per_rank,) = run_ranks(t, lengths, batch_size, num_replicas, seed=seed, epochs=(epoch,))
    got = padding_share(torch.tensor([b for batches in per_rank for b in batches],
                                     dtype=torch.int64), lengths)
    baseline = random_padding(t, lengths, batch_size)
    t.expect(got <= PAYOFF * baseline, T(
        f"所有 rank 的批次的填充比例是 {got:.3f}，随机分批是 {baseline:.3f}，只降到了 "
        f"{got / baseline:.0%}，要求不超过 {PAYOFF:.0%} —— 先按长度排序（在足够大的池子里，或者"
        f"对全部索引加一点噪声排序）再切批次", f"the batches of all ranks pad {got:.3f} of their "
        f"tokens and random batching {baseline:.3f}: {got / baseline:.0%} of it, at most "
        f"{PAYOFF:.0%} is required — sort by length (inside large pools, or all indices with a "
        f"little noise) before cutting batches")
        + where(lengths="log-normal", N=BIG_N, batch_size=batch_size,
                num_replicas=num_replicas, seed=seed, epoch=epoch))


@case(zh="相同的 (seed, epoch) 得到相同的批次（再迭代、新建、换构造顺序、默认 epoch 0）",
      en="the same (seed, epoch) gives the same batches (again, new samplers, any build "
         "order, epoch 0 by default)")
def reproducible(t):
    num_replicas, batch_size = t.random.choice([2, 3, 4]), t.random.choice([4, 8, 16])
    lengths = lognormal_lengths(t, 3000)
    seed, epoch = new_seed(t), t.random.randint(2, 30)
    at = where(N=3000, batch_size=batch_size, num_replicas=num_replicas, seed=seed)
    first = run_ranks(t, lengths, batch_size, num_replicas, seed=seed,
                      epochs=(0, epoch, None))
    expect_same(t, first[2], first[1], lengths, f"set_epoch({epoch})", at, T(
        f"set_epoch({epoch}) 之后迭代两次，结果不同：同一个 (seed, epoch) 必须给出相同的批次"
        f"（是不是每次迭代都在消耗同一个长期存在的生成器？）",
        f"two iterations after set_epoch({epoch}) differ: the same (seed, epoch) must give the "
        f"same batches (does every iteration draw from one long-lived generator?)"))
    order = list(range(num_replicas))
    t.random.shuffle(order)
    again = run_ranks(t, lengths, batch_size, num_replicas, seed=seed, epochs=(epoch,),
                      ranks=order)[0]
    expect_same(t, again, [first[1][r] for r in order], lengths, f"set_epoch({epoch})", at, T(
        f"按 rank {order} 的顺序新建 sampler 再 set_epoch({epoch})，应当得到和第一次一样的批次"
        f"（每个 rank 只由自己的参数和 (seed, epoch) 决定；断点续训也依赖这一点）",
        f"new samplers built in the rank order {order}, after set_epoch({epoch}), must yield "
        f"what the first ones did (each rank depends on its own arguments and (seed, epoch) "
        f"only; resuming a run depends on it)"), ranks=order)
    unset = run_ranks(t, lengths, batch_size, num_replicas, seed=seed, epochs=(None,))[0]
    expect_same(t, unset, first[0], lengths, "epoch 0", at, T(
        "没有调用 set_epoch 时就是 epoch 0（和 DistributedSampler 一样）",
        "without a set_epoch call the epoch is 0 (as in DistributedSampler)"))


@case(zh="一个 rank 单独在自己的进程里，得到同样的批次",
      en="a rank alone in its own process gets the same batches")
def rank_alone(t):
    num_replicas, batch_size = t.random.choice([3, 4, 8]), t.random.choice([4, 8])
    lengths, seed = lognormal_lengths(t, 2000), new_seed(t)
    epoch, rank = t.random.randrange(10), t.random.randrange(num_replicas)
    together = run_ranks(t, lengths, batch_size, num_replicas, seed=seed, epochs=(epoch,))[0]
    with t.fresh() as run:
        alone = run_ranks(t, lengths, batch_size, num_replicas, seed=seed, epochs=(epoch,),
                          ranks=[rank], fresh=run)[0]
    expect_same(t, alone, [together[rank]], lengths, f"rank {rank}", where(
        N=2000, batch_size=batch_size, num_replicas=num_replicas, seed=seed, epoch=epoch), T(
        "真实训练里每个 rank 是一个单独的进程：sampler 的结果只能取决于它自己的参数和 "
        "(seed, epoch)，不能依赖同一进程里的其他 sampler（类属性、全局变量、构造的次数）",
        "in real training every rank is a process of its own: a sampler's batches may depend "
        "on its own arguments and (seed, epoch) only, never on other samplers in the same "
        "process (class attributes, globals, how many were built)"), ranks=[rank])


@case(zh="set_epoch 改变顺序", en="set_epoch changes the order")
def epoch_changes_order(t):
    num_replicas, batch_size = t.random.choice([2, 4]), t.random.choice([4, 8])
    lengths = lognormal_lengths(t, 2000)
    epochs = sorted(t.random.sample(range(50), 3))
    for seed in (0, new_seed(t)):  # seed 0 is the default: seed * epoch would be 0 always
        runs = run_ranks(t, lengths, batch_size, num_replicas, seed=seed, epochs=epochs)
        for a in range(3):
            for b in range(a + 1, 3):
                t.expect(runs[a] != runs[b], T(
                    f"set_epoch({epochs[a]}) 和 set_epoch({epochs[b]}) 给出了完全相同的批次：生成器"
                    f"的种子要同时包含 seed 和 epoch", f"set_epoch({epochs[a]}) and "
                    f"set_epoch({epochs[b]}) gave exactly the same batches: seed the generator "
                    f"with both seed and epoch") + where(N=2000, batch_size=batch_size,
                                                         num_replicas=num_replicas, seed=seed))


@case(zh="不同的 seed 给出不同的顺序", en="a different seed gives a different order")
def seed_changes_order(t):
    num_replicas, batch_size = t.random.choice([2, 4]), t.random.choice([4, 8])
    lengths = lognormal_lengths(t, 2000)
    seeds = t.random.sample(range(2**31), 3)
    for epoch in (0, t.random.randrange(1, 10)):  # epoch 0 too: seed * epoch is 0 there
        runs = [run_ranks(t, lengths, batch_size, num_replicas, seed=s, epochs=(epoch,))[0]
                for s in seeds]
        for a in range(3):
            for b in range(a + 1, 3):
                t.expect(runs[a] != runs[b], T(
                    f"seed={seeds[a]} 和 seed={seeds[b]} 在 epoch {epoch} 给出了完全相同的批次："
                    f"生成器的种子要包含 seed", f"seed={seeds[a]} and seed={seeds[b]} gave exactly "
                    f"the same batches in epoch {epoch}: seed the generator with seed too")
                    + where(N=2000, batch_size=batch_size, num_replicas=num_replicas))


def global_rng_runs(t):
    """Two runs of the same (seed, epoch), after seeding the global RNGs differently."""
    num_replicas, batch_size = t.random.choice([2, 3, 4]), t.random.choice([4, 8])
    lengths, seed, epoch = lognormal_lengths(t, 1500), new_seed(t), t.random.randrange(10)
    global_seeds = t.random.sample(range(2**31), 2)
    runs = t.sub.scenario("global_rng", lengths, batch_size, num_replicas, seed=seed,
                          epoch=epoch, global_seeds=global_seeds)
    if not (isinstance(runs, list) and len(runs) == 2):
        unrecognisable(t)
    runs = [scenario_dict(t, run, ("ranks", "changed")) for run in runs]
    at = where(N=1500, batch_size=batch_size, num_replicas=num_replicas, seed=seed, epoch=epoch)
    unpacked = []
    for run in runs:
        if not (isinstance(run["ranks"], list) and len(run["ranks"]) == num_replicas):
            unrecognisable(t, at)
        per_rank = [unpack(t, rec, at) for rec in run["ranks"]]
        check_counts(t, per_rank, 1500, batch_size, num_replicas, at)
        check_disjoint(t, per_rank, 1500, at)
        unpacked.append(per_rank)
    return runs, unpacked, lengths, at, global_seeds


@case(zh="不改变全局随机数状态（torch、random、numpy）",
      en="the global RNG states (torch, random, numpy) are left unchanged")
def global_rng_untouched(t):
    runs, _, _, at, _ = global_rng_runs(t)
    for run in runs:
        t.expect(not run["changed"], T(
            f"构造并迭代 sampler 之后，全局随机数状态变了：{run['changed']}。请用自己的 "
            f"torch.Generator / numpy 的 Generator / random.Random；不要调用 torch.manual_seed、"
            f"不带 generator 的 torch.randperm(n)、random.shuffle 之类", f"building and "
            f"iterating the samplers changed the global RNG state of {run['changed']}. Use a "
            f"private torch.Generator / numpy Generator / random.Random; do not call "
            f"torch.manual_seed, torch.randperm(n) without a generator, random.shuffle and the "
            f"like") + at)


@case(zh="结果不依赖全局随机数", en="the result does not depend on the global RNGs")
def global_rng_not_used(t):
    _, (a, b), lengths, at, global_seeds = global_rng_runs(t)
    expect_same(t, b, a, lengths, "list(sampler)", at, T(
        f"全局随机数种子先后设为 {global_seeds[0]} 和 {global_seeds[1]}，结果变了：顺序只能由 "
        f"(seed, epoch) 决定 —— 各个 rank 的全局随机数状态一般并不相同，"
        f"用了它们各 rank 就会算出不同的全局顺序",
        f"the global RNGs seeded with {global_seeds[0]}, then {global_seeds[1]} "
        f"changed the result: the order must depend on (seed, epoch) only — the ranks' global "
        f"RNG states usually differ, and with them the ranks would compute different global "
        f"orders"))


@case(zh="步的顺序不按长度排序（长短混合）",
      en="the order of steps is not sorted by length (long and short steps mixed)")
def steps_mixed(t):
    num_replicas, batch_size = t.random.choice([2, 4]), t.random.choice([4, 8])
    lengths, seed = lognormal_lengths(t, BIG_N), new_seed(t)
    epoch = t.random.randrange(10)
    (per_rank,) = run_ranks(t, lengths, batch_size, num_replicas, seed=seed, epochs=(epoch,))
    means = step_means(per_rank, lengths)
    at = where(N=BIG_N, batch_size=batch_size, num_replicas=num_replicas, seed=seed,
               epoch=epoch)
    tip = T("排好序、切成步之后，要用每个 rank 都相同的生成器把步的顺序整体打乱",
            "after sorting and cutting into steps, shuffle the order of the steps with a "
            "generator that is the same on every rank")
    share, moving = rising_share(means)
    t.expect(MIXED[0] <= share <= MIXED[1], T(
        f"相邻两步里，后一步平均长度更长的占 {share:.2f}（共 {moving} 对）；随机顺序约为 0.5，"
        f"要求在 {MIXED[0]} 到 {MIXED[1]} 之间 —— 步按长度依次产出，模型就会先只看到短句、"
        f"再只看到长句。", f"the next step is longer on average than the one before in "
        f"{share:.2f} of {moving} neighbouring pairs; a random order gives about 0.5, and "
        f"{MIXED[0]} to {MIXED[1]} is required — steps in length order feed the model all "
        f"short sequences, then all long ones. ") + tip + at)
    rho = trend(means)
    t.expect(abs(rho) <= TREND, T(
        f"步的位置和它的平均长度的秩相关系数是 {rho:+.2f}；随机顺序接近 0，要求在 ±{TREND} 以内 —— "
        f"整个 epoch 从短到长（或从长到短）。", f"the rank correlation between a step's position "
        f"and its mean length is {rho:+.2f}; a random order gives about 0, and within "
        f"±{TREND} is required — the epoch runs from short to long (or long to short). ")
        + tip + at)
    turns, counted = turning_share(means)
    t.expect(turns >= TURNS, T(
        f"只有 {turns:.2f} 的步（共 {counted} 个）比两边的邻居都长或都短；"
        f"随机顺序约为 2/3，要求至少 {TURNS} —— "
        f"平均长度一段一段地单调上升、下降（比如每个池子排好序之后依次产出）。",
        f"only {turns:.2f} of {counted} steps are longer or shorter than both neighbours; a "
        f"random order gives about 2/3, and at least {TURNS} is required — the mean length "
        f"rises and falls in long monotone runs (as when sorted pools are yielded in turn). ")
        + tip + at)


@case(zh="lengths 是 tuple 或一维张量", en="lengths given as a tuple or a 1-D tensor")
def lengths_types(t):
    num_replicas, batch_size = t.random.choice([2, 3]), t.random.choice([4, 8])
    lengths = lognormal_lengths(t, t.random.randint(300, 900))
    for kind in ("tuple", "tensor"):
        run_ranks(t, lengths, batch_size, num_replicas, seed=new_seed(t), epochs=(0, 1),
                  kind=kind)


@case(zh="配合 DataLoader，多个 epoch", en="a DataLoader over several epochs")
def dataloader_epochs(t):
    num_replicas, batch_size = t.random.choice([2, 4]), t.random.choice([4, 8])
    n = num_replicas * batch_size * t.random.randint(3, 20) + t.random.randint(1, 7)
    check_dataloader(t, lognormal_lengths(t, n), batch_size=batch_size,
                     num_replicas=num_replicas, rank=t.random.randrange(num_replicas),
                     seed=new_seed(t), epochs=[0, t.random.randint(1, 9)])


@case(zh="参数不合法时抛出 ValueError", en="ValueError for invalid arguments")
def invalid_arguments(t):
    lengths = torch.tensor([3, 1, 2, 5, 4, 4, 1, 2])
    r = t.random.randint(2, 4)
    for batch_size, num_replicas, rank in [(0, 2, 0), (-t.random.randint(1, 5), 2, 1),
                                           (2, 0, 0), (2, r, r), (2, r, r + 1), (2, r, -1)]:
        t.expect_raises("ValueError", lambda b=batch_size, n=num_replicas, k=rank:
                        t.sub.scenario("make_sampler", lengths, b, n, k),
                        f"DistributedBucketSampler(lengths, batch_size={batch_size}, "
                        f"num_replicas={num_replicas}, rank={rank})",
                        hint=T("在 __init__ 里检查：batch_size ≥ 1、num_replicas ≥ 1、"
                               "0 ≤ rank < num_replicas", "check in __init__: batch_size ≥ 1, "
                               "num_replicas ≥ 1, 0 ≤ rank < num_replicas"))


# ---------------------------------------------------------------- throughput


@workload
def million_lengths(device):
    """One rank's epoch (of 8) over 1,000,000 log-normal lengths, construction included.
    Every timed result is checked: len() right, N // (8 * 32) full batches, no index twice,
    and a padding ratio that shows real bucketing."""
    n, batch_size, num_replicas = 1_000_000, 32, 8
    last = {}  # the inputs of the call being checked (make and check alternate)

    def make(rng):
        mu = 4.0 + float(torch.rand((), generator=rng))
        lengths = torch.exp(mu + 0.8 * torch.randn(n, generator=rng)).ceil().clamp(1, 16384)
        last["lengths"] = lengths.long()
        shuffled = last["lengths"][torch.randperm(n, generator=rng)].view(-1, batch_size)
        padded = int(shuffled.amax(dim=1).sum()) * batch_size
        last["random"] = (padded - int(last["lengths"].sum())) / padded
        rank = int(torch.randint(0, num_replicas, (), generator=rng))
        seed = int(torch.randint(0, 2**31, (), generator=rng))
        epoch = int(torch.randint(0, 100, (), generator=rng))
        return [last["lengths"], batch_size, num_replicas, rank, seed, epoch], {}

    def check(got, expected):
        return check_rank_epoch(got, last["lengths"], batch_size, num_replicas, last["random"])

    return Workload(fn="one_epoch", target="fixture", prepare="prepare_epoch", make=make,
                    check=check, warmup=1)


def check_rank_epoch(got, lengths, batch_size, num_replicas, baseline):
    """True for a right epoch of one rank in the timed workload, else what is wrong."""
    if not (isinstance(got, dict) and isinstance(got.get("flat"), torch.Tensor)
            and isinstance(got.get("sizes"), torch.Tensor)
            and got["flat"].dtype == got["sizes"].dtype == torch.int64
            and got["flat"].dim() == 1):
        return T("结果不完整", "the result is incomplete")
    flat, sizes, n = got["flat"], got["sizes"], len(lengths)
    count = steps_of(n, batch_size, num_replicas)
    if got.get("len") != count or len(sizes) != count:
        return T(f"期望 {count} 个批次；len() 为 {got.get('len')}，实际产出 {len(sizes)} 个",
                 f"expected {count} batches; len() says {got.get('len')}, {len(sizes)} came")
    if not bool((sizes == batch_size).all()) or len(flat) != count * batch_size:
        return T("有的批次不是恰好 batch_size 个索引", "a batch does not hold exactly batch_size")
    if (int(flat.min()) < 0 or int(flat.max()) >= n
            or not bool((torch.bincount(flat, minlength=n) <= 1).all())):
        return T("索引越界或重复", "an index is out of range or repeated")
    share = padding_share(flat.view(count, batch_size), lengths)
    if share > PAYOFF * baseline:
        return T(f"填充比例 {share:.3f}，随机分批为 {baseline:.3f}：没有真正分桶",
                 f"padding ratio {share:.3f} against {baseline:.3f} for random batches: no "
                 f"real bucketing")
    return True
