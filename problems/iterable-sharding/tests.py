"""Tests for iterable-sharding. Public cases first; hidden ones draw fresh shards per seed.

fixture.py builds one ShardedStream per simulated rank and iterates it through a real
DataLoader with worker processes; every sample comes back with the id of the worker that
produced it, so the grader sees each consumer's stream (consumer c = rank × num_workers +
worker id). Checked against the contract:

- every sample exactly once per epoch, over all consumers;
- each consumer reads whole shards, one after another;
- consumer c of K reads the shards at positions c, c + K, ... of the epoch's shard order:
  with shuffle=False the given order (so the streams are fixed, and equal the reference's);
  with shuffle=True the order that one consumer alone (world_size=1, no workers) reads
  for the same (seed, epoch): it depends on (seed, epoch) only;
- shuffle=True permutes the shard order and the order inside shards, reproducibly for a
  (seed, epoch), differently for another epoch or seed, and without the global RNGs.

A correct solution's free choices are never tested: how the permutations are drawn, and
whether a shard's inner order depends on who reads it.
"""

import json

from judge.i18n import T
from judge.testing import case

BIG_SHARD = 8  # a shard this long is (almost surely) reordered by a shuffle


# ---------------------------------------------------------------- inputs


def make_shards(t, count, *, low=0, high=20, kind="int"):
    """``count`` shards of random sizes; every sample unique (random ints, or strings and
    lists for kind="any"), so that each one can be traced back to its shard."""
    sizes = [t.random.randint(low, high) for _ in range(count)]
    values = t.random.sample(range(10**6), sum(sizes))
    shards, at = [], 0
    for size in sizes:
        shard = values[at: at + size]
        if kind == "any":
            shard = [f"doc-{v}" if v % 3 == 0 else [v, f"片段{v % 97}"] if v % 3 == 1 else v
                     for v in shard]
        shards.append(shard)
        at += size
    return shards


def key(sample):
    return json.dumps(sample, ensure_ascii=False)


def new_seed(t):
    return t.random.randrange(2**31)


def where(shards, **config):
    sizes = [len(s) for s in shards]
    shown = sizes if len(sizes) <= 12 else [*sizes[:12], "..."]
    text = ", ".join(f"{k}={v}" for k, v in config.items())
    return T(f"\n（{len(shards)} 个分片，大小 {shown}；{text}）",
             f"\n({len(shards)} shards of sizes {shown}; {text})")


def who(c, workers):
    w = max(1, workers)
    return T(f"consumer {c}（rank {c // w}，worker {c % w}）",
             f"consumer {c} (rank {c // w}, worker {c % w})")


# ---------------------------------------------------------------- running


def run(t, shards, *, world_size, workers, shuffle=False, seed=0, epochs=(0,), method="fork"):
    """Every consumer's stream per epoch: ``out[e][c]`` is a list of samples."""
    res = t.sub.scenario("consume", shards, world_size=world_size, workers=workers,
                         shuffle=shuffle, seed=seed, epochs=list(epochs), method=method)
    return streams_of(t, res, shards, world_size=world_size, workers=workers,
                      shuffle=shuffle, seed=seed, epochs=epochs)


def streams_of(t, res, shards, *, world_size, workers, shuffle, seed, epochs):
    """The consume scenario's result as ``out[e][c]``, or the case fails saying why."""
    at = where(shards, world_size=world_size, num_workers=workers, shuffle=shuffle, seed=seed)
    if isinstance(res, dict) and isinstance(res.get("built"), dict):
        b = res["built"]
        t.fail(T(f"ShardedStream(..., rank={res.get('rank')}) 抛出了 {b.get('raised')}: "
                 f"{b.get('message')}", f"ShardedStream(..., rank={res.get('rank')}) raised "
                 f"{b.get('raised')}: {b.get('message')}") + at)
    if isinstance(res, dict) and "not_iterable" in res:
        t.fail(T("ShardedStream 应当继承 torch.utils.data.IterableDataset",
                 "ShardedStream must subclass torch.utils.data.IterableDataset"))
    if isinstance(res, dict) and isinstance(res.get("failed"), dict):
        f = res["failed"]
        t.fail(T(f"rank {res.get('rank')} 的 DataLoader 在 epoch {res.get('epoch')} 抛出了 "
                 f"{f.get('raised')}: {f.get('message')}", f"rank {res.get('rank')}'s "
                 f"DataLoader raised {f.get('raised')} in epoch {res.get('epoch')}: "
                 f"{f.get('message')}") + at)
    ranks = res.get("ranks") if isinstance(res, dict) else None
    if not (isinstance(ranks, list) and len(ranks) == world_size
            and all(isinstance(p, list) and len(p) == len(epochs) for p in ranks)):
        t.fail(T("场景返回了无法识别的结果", "the scenario returned something unrecognisable"))
    w = max(1, workers)
    out = []
    for e in range(len(epochs)):
        streams = [[] for _ in range(world_size * w)]
        for rank, passes in enumerate(ranks):
            for pair in passes[e]:
                if not (isinstance(pair, list) and len(pair) == 2 and pair[0] in range(w)):
                    t.fail(T("场景返回了无法识别的结果",
                             "the scenario returned something unrecognisable"))
                streams[rank * w + pair[0]].append(pair[1])
        out.append(streams)
    return out


# ---------------------------------------------------------------- contract checks


def check_partition(t, streams, shards, workers, at):
    """Every sample of every shard exactly once, over all consumers."""
    owner = {key(s): i for i, shard in enumerate(shards) for s in shard}
    seen: dict[str, list[int]] = {}
    for c, stream in enumerate(streams):
        for sample in stream:
            k = key(sample)
            if k not in owner:
                t.fail(T(f"{who(c, workers).zh} 产出了不属于任何分片的 {k[:60]}",
                         f"{who(c, workers).en} yielded {k[:60]}, which is in no shard") + at)
            seen.setdefault(k, []).append(c)
    total = sum(len(s) for s in shards)
    if total and not seen:
        t.fail(T("这个 epoch 一个样本都没有产出：每次 iter() 都要重新开始一个 epoch（在 __init__ "
                 "里只创建一次的"
                 "生成器只能用一次"
                 "）", "this epoch yielded no sample at all: every iter() must start "
                 "the epoch over (a generator made once in __init__ runs only once)") + at)
    twice = next(((k, cs) for k, cs in seen.items() if len(cs) > 1), None)
    missing = [k for k in owner if k not in seen]
    if twice is not None:
        k, cs = twice
        t.fail(T(f"样本 {k[:60]} 出现了 {len(cs)} 次（consumer {cs[:6]}）", f"sample {k[:60]} came "
                 f"{len(cs)} times (consumers {cs[:6]})") + at + T(" —— ", " — ")
               + partition_hint(streams, workers, bool(missing)))
    if missing:
        t.fail(T(f"有 {len(missing)} 个样本没有出现，例如 {missing[0][:60]}（分片 "
                 f"{owner[missing[0]]}）", f"{len(missing)} samples never came, for example "
                 f"{missing[0][:60]} (shard {owner[missing[0]]})") + at + T(" —— ", " — ")
               + partition_hint(streams, workers, True))


DISAGREE = T("各个 consumer 对这个 epoch 的分片顺序意见不一，于是有的分片读了两次、有的没读："
             "打乱只能用 (seed, "
             "epoch) 作种子的私有生成器，不要掺入 rank、worker id，也不要用全局随机数"
             "（DataLoader 给每个 worker 设了不同的种子）",
             "the consumers disagree on the epoch's shard order, so some shards are read "
             "twice and others never: shuffle with a private generator seeded from (seed, "
             "epoch) only, not the rank or the worker id, and not the global RNGs (the "
             "DataLoader seeds each worker differently)")


def partition_hint(streams, workers, holes):
    """Name the likely bug from how the consumers' streams overlap."""
    w = max(1, workers)
    pairs = [(a, b) for a in range(len(streams)) for b in range(a + 1, len(streams))
             if streams[a] and streams[a] == streams[b]]
    if any(a // w == b // w for a, b in pairs):
        return T("同一个 rank 的几个 worker 产出了完全相同的样本：在 __iter__ 里用 "
                 "get_worker_info() "
                 "按 worker 划分（__init__ 在主进程里运行，那里 get_worker_info() 是 None）",
                 "several workers of one rank yielded exactly the same samples: split between "
                 "workers with get_worker_info() in __iter__ (__init__ runs in the main "
                 "process, where get_worker_info() is None)")
    if pairs:
        return T("几个 rank 产出了完全相同的样本：consumer 编号是 rank × num_workers + worker_id，"
                 "共有 world_size × num_workers 个 consumer",
                 "several ranks yielded exactly the same samples: the consumer index is rank × "
                 "num_workers + worker_id, out of world_size × num_workers consumers")
    if holes:
        return DISAGREE
    return T("consumer c = rank × num_workers + worker_id 只读位置 c, c + K, c + 2K…… 上的分片",
             "consumer c = rank × num_workers + worker_id reads only the shards at positions "
             "c, c + K, c + 2K ...")


def shard_runs(t, stream, shards, c, workers, at):
    """The shards a consumer read, in order, checking that each is whole and read in one
    go (all of it, then the next)."""
    owner = {key(s): i for i, shard in enumerate(shards) for s in shard}
    runs, k = [], 0
    while k < len(stream):
        shard = owner[key(stream[k])]
        end = k
        while end < len(stream) and owner[key(stream[end])] == shard:
            end += 1
        if shard in runs:
            t.fail(T(f"{who(c, workers).zh} 读分片 {shard} 时中途去读了别的分片："
                     f"要读完一个分片再读下一个",
                     f"{who(c, workers).en} left shard {shard} for another and came back: read "
                     f"one whole shard, then the next") + at)
        if end - k != len(shards[shard]):
            t.fail(T(f"{who(c, workers).zh} 只读了分片 {shard} 的 {end - k} 个样本（共 "
                     f"{len(shards[shard])} 个）", f"{who(c, workers).en} read {end - k} of "
                     f"shard {shard}'s {len(shards[shard])} samples") + at)
        runs.append(shard)
        k = end
    return runs


def check_assignment(t, streams, shards, order, workers, at, *, exact_inside=False):
    """Consumer c reads the non-empty shards at positions c, c + K, ... of ``order``."""
    k = len(streams)
    for c, stream in enumerate(streams):
        got = shard_runs(t, stream, shards, c, workers, at)
        expected = [s for s in order[c::k] if shards[s]]
        if got != expected:
            t.fail(T(f"{who(c, workers).zh} 读了分片 {got[:10]}，期望这个 epoch 分片顺序中第 "
                     f"{c}、{c} + {k}、"
                     f"{c} + 2×{k}…… 个位置上的分片 {expected[:10]}",
                     f"{who(c, workers).en} read shards {got[:10]}; expected those at positions "
                     f"{c}, {c} + {k}, {c} + 2×{k} ... of the epoch's shard order, "
                     f"{expected[:10]}") + at + assignment_hint(got, expected, order, c, k))
        if exact_inside:
            inner = [x for s in expected for x in shards[s]]
            t.expect(stream == inner, T(f"{who(c, workers).zh}：shuffle=False "
                                        f"时分片内的样本保持原来的顺序",
                                        f"{who(c, workers).en}: with shuffle=False the samples "
                                        f"of a shard keep their order") + at)


def assignment_hint(got, expected, order, c, k):
    if sorted(got) == sorted(expected):
        return T(" —— 分片的顺序也要按这个 epoch 的顺序", " — and in the epoch's order")
    return T(" —— consumer c = rank × num_workers + worker_id 读位置 c, c + K, c + 2K……"
             "（步长为 K 的交错划分，不是连续的一段）", " — consumer c = rank × num_workers + "
             "worker_id reads positions c, c + K, c + 2K ... (strided, not a contiguous block)")


def epoch_order(t, shards, seed, epoch):
    """The epoch's shard order as one consumer alone reads it (world_size=1, no workers)."""
    (streams,) = run(t, shards, world_size=1, workers=0, shuffle=True, seed=seed,
                     epochs=(epoch,))
    at = where(shards, world_size=1, num_workers=0, shuffle=True, seed=seed, epoch=epoch)
    check_partition(t, streams, shards, 0, at)
    return shard_runs(t, streams[0], shards, 0, 0, at), streams[0]


def check_shuffled(t, shards, *, world_size, workers, seed, epoch, method="fork"):
    """Partition, whole shards, and the shard order of a lone consumer, split K ways."""
    order, _ = epoch_order(t, shards, seed, epoch)
    (streams,) = run(t, shards, world_size=world_size, workers=workers, shuffle=True,
                     seed=seed, epochs=(epoch,), method=method)
    at = where(shards, world_size=world_size, num_workers=workers, shuffle=True, seed=seed,
               epoch=epoch)
    check_partition(t, streams, shards, workers, at)
    if any(not s for s in shards):
        return streams  # where empty shards stand is invisible: partition checks only
    check_assignment(t, streams, shards, order, workers, at + T(
        f"（world_size=1、没有 worker 时这个 epoch 的分片顺序是 {order[:12]}）",
        f" (world_size=1 without workers reads this epoch's shards as {order[:12]})"))
    return streams


# ---------------------------------------------------------------- public cases

EXAMPLE = [[0, 1, 2], [3, 4], [5], [6, 7, 8, 9], [10, 11]]


@case(public=True, zh="题面里的例子：shuffle=False，2 个 rank × 2 个 worker",
      en="the statement's example: shuffle=False, 2 ranks × 2 workers", timeout_s=60)
def example_basic(t):
    (streams,) = run(t, EXAMPLE, world_size=2, workers=2)
    at = where(EXAMPLE, world_size=2, num_workers=2, shuffle=False)
    check_partition(t, streams, EXAMPLE, 2, at)
    check_assignment(t, streams, EXAMPLE, list(range(len(EXAMPLE))), 2, at, exact_inside=True)
    t.note("consumer 0 读分片 0 和 4，consumer 1 读分片 1，consumer 2 读分片 2，consumer 3 "
           "读分片 3",
           "consumer 0 reads shards 0 and 4, consumer 1 shard 1, consumer 2 shard 2, "
           "consumer 3 shard 3")


@case(public=True, zh="shuffle=True：每个样本一次，同一个 epoch 可复现，set_epoch 改变顺序",
      en="shuffle=True: every sample once, an epoch reproduces, set_epoch changes it",
      timeout_s=60)
def example_shuffle(t):
    shards = [[100 * s + k for k in range(t.random.randint(1, 9))] for s in range(12)]
    first, again, other = run(t, shards, world_size=2, workers=2, shuffle=True, seed=7,
                              epochs=(0, 0, 1))
    for epoch, streams in ((0, first), (1, other)):
        check_partition(t, streams, shards, 2,
                        where(shards, world_size=2, num_workers=2, seed=7, epoch=epoch))
    t.expect(again == first, T("同一个 (seed, epoch) 两次迭代的结果不同：顺序只能由 (seed, "
                               "epoch) 决定",
                               "the same (seed, epoch) iterated twice gave different streams: "
                               "the order must depend on (seed, epoch) only"))
    t.expect(other != first, T("set_epoch(1) 之后顺序没有变：set_epoch 要改变打乱的结果",
                               "set_epoch(1) did not change the order: set_epoch must change the "
                               "shuffle"))


# ---------------------------------------------------------------- hidden cases


def no_shuffle(t, shards, world_size, workers, method="fork"):
    """shuffle=False: every consumer's stream is fixed by the contract (and equals the
    reference's, checked too)."""
    at = where(shards, world_size=world_size, num_workers=workers, shuffle=False)
    config = {"world_size": world_size, "workers": workers, "epochs": [0], "method": method}
    got = t.sub.scenario("consume", shards, **config)
    (streams,) = streams_of(t, got, shards, world_size=world_size, workers=workers,
                            shuffle=False, seed=0, epochs=(0,))
    check_partition(t, streams, shards, workers, at)
    check_assignment(t, streams, shards, list(range(len(shards))), workers, at,
                     exact_inside=True)
    expected = t.ref.scenario("consume", shards, **config)
    t.expect(got == expected, T("和参考解答的输出不"
                                "同", "differs from the reference's streams") + at)


@case(zh="shuffle=False：rank 和 worker 的各种组合，与参考解答完全一致",
      en="shuffle=False: ranks and workers in many combinations, exactly as the reference",
      timeout_s=90)
def no_shuffle_exact(t):
    for world_size, workers in ((1, 2), (2, 0), (3, 1), (2, 3), (4, 2)):
        no_shuffle(t, make_shards(t, t.random.randint(1, 25)), world_size, workers)


@case(zh="分片比 consumer 少（有的 consumer 什么也不读）、空分片",
      en="fewer shards than consumers (some read nothing), empty shards", timeout_s=60)
def fewer_shards_than_consumers(t):
    no_shuffle(t, make_shards(t, t.random.randint(1, 5)), 3, 2)
    shards = make_shards(t, 9)
    for k in t.random.sample(range(9), 3):
        shards[k] = []
    no_shuffle(t, shards, 2, 2)


@case(zh="一个 rank，几个 worker：按 worker 划分", en="one rank, several workers: split by "
      "worker", timeout_s=60)
def workers_of_one_rank(t):
    no_shuffle(t, make_shards(t, t.random.randint(6, 20), low=1), 1, 3)


@case(zh="几个 rank，没有 worker（num_workers=0 算一个 worker）",
      en="several ranks without workers (num_workers=0 counts as one)", timeout_s=60)
def ranks_without_workers(t):
    no_shuffle(t, make_shards(t, t.random.randint(6, 20), low=1), t.random.randint(2, 4), 0)


@case(zh="样本可以是任意对象（字符串、列表）", en="samples may be anything (strings, lists)",
      timeout_s=60)
def samples_of_any_type(t):
    no_shuffle(t, make_shards(t, t.random.randint(4, 12), kind="any"), 2, 2)


@case(zh="shuffle=True：每个样本一次，整片整片地读，分片顺序只由 (seed, epoch) 决定",
      en="shuffle=True: every sample once, whole shards, a shard order from (seed, epoch) "
      "only", timeout_s=120)
def shuffled_partition(t):
    for world_size, workers in ((2, 2), (3, 1), (1, 3), (2, 0)):
        shards = make_shards(t, t.random.randint(8, 30), low=1)
        check_shuffled(t, shards, world_size=world_size, workers=workers, seed=new_seed(t),
                       epoch=t.random.randrange(100))


@case(zh="shuffle=True 时分片的顺序和分片内的顺序都被打乱",
      en="shuffle=True permutes the shard order and the order inside shards", timeout_s=60)
def shuffle_inside_shards(t):
    shards = make_shards(t, 12, low=BIG_SHARD, high=30)
    seed, epoch = new_seed(t), t.random.randrange(100)
    order, stream = epoch_order(t, shards, seed, epoch)
    at = where(shards, world_size=1, num_workers=0, shuffle=True, seed=seed, epoch=epoch)
    t.expect(order != sorted(order), T(
        "shuffle=True 时分片的顺序没有打乱", "shuffle=True did not permute the shard order") + at)
    inside = [stream[k: k + len(shards[s])] for k, s in zip(
        [sum(len(shards[x]) for x in order[:j]) for j in range(len(order))], order,
        strict=True)]
    kept = sum(part == shards[s] for part, s in zip(inside, order, strict=True))
    t.expect(kept < len(shards), T(
        f"{len(shards)} 个分片（每个至少 {BIG_SHARD} 个样本）里的样本全都保持原来的顺序："
        f"shuffle=True 时分片内的顺序也要打乱",
        f"the samples of all {len(shards)} shards (of {BIG_SHARD} or more each) kept their "
        f"order: with shuffle=True the order inside each shard is permuted too") + at)


@case(zh="set_epoch 改变顺序；同一个 epoch 再迭代一次（新的 iter）结果相同",
      en="set_epoch changes the order; iterating an epoch again (a new iter) repeats it",
      timeout_s=90)
def epochs_and_passes(t):
    shards = make_shards(t, t.random.randint(10, 20), low=1)
    seed = new_seed(t)
    e1, e2 = t.random.sample(range(100), 2)
    first, again, other, back = run(t, shards, world_size=2, workers=2, shuffle=True,
                                    seed=seed, epochs=(e1, None, e2, e1))
    for epoch, streams in ((e1, first), (e1, again), (e2, other)):
        check_partition(t, streams, shards, 2,
                        where(shards, world_size=2, num_workers=2, seed=seed, epoch=epoch))
    at = where(shards, world_size=2, num_workers=2, seed=seed)
    t.expect(again == first, T(
        f"set_epoch({e1}) 之后迭代两次，结果不同：每个新的 iter() 都从这个 epoch 的开头重新开始，"
        f"顺序只由 (seed, epoch) 决定", f"after set_epoch({e1}), two passes differ: every new "
        f"iter() starts the epoch over, in an order that depends on (seed, epoch) only") + at)
    t.expect(back == first, T(f"回到 set_epoch({e1}) 之后，顺序和第一次不同",
                              f"back at set_epoch({e1}), the order differs from the first "
                              f"time") + at)
    t.expect(other != first, T(f"set_epoch({e2}) 和 set_epoch({e1}) 的顺序相同：打乱要用 epoch "
                               f"作种子",
                               f"set_epoch({e2}) gave the same order as set_epoch({e1}): seed "
                               f"the shuffle with the epoch") + at)
    # Without workers the main process iterates the very same object twice.
    once, twice = run(t, shards, world_size=2, workers=0, shuffle=True, seed=seed,
                      epochs=(e1, None))
    at = where(shards, world_size=2, num_workers=0, seed=seed, epoch=e1)
    check_partition(t, twice, shards, 0, at + T("，第二次迭代", ", second pass"))
    t.expect(twice == once, T("没有 worker 时，同一个数据集对象迭代两次结果不同",
                              "without workers, the same dataset object iterated twice gave "
                              "different streams") + at)


@case(zh="不同的 seed 给出不同的顺序；新建的数据集给出相同的顺序",
      en="another seed gives another order; a new dataset the same one", timeout_s=60)
def seeds(t):
    shards = make_shards(t, t.random.randint(10, 20), low=1)
    s1, s2 = t.random.sample(range(2**31), 2)
    epoch = t.random.randrange(100)
    a = run(t, shards, world_size=1, workers=2, shuffle=True, seed=s1, epochs=(epoch,))
    b = run(t, shards, world_size=1, workers=2, shuffle=True, seed=s1, epochs=(epoch,))
    c = run(t, shards, world_size=1, workers=2, shuffle=True, seed=s2, epochs=(epoch,))
    at = where(shards, world_size=1, num_workers=2, epoch=epoch)
    t.expect(a == b, T(f"seed={s1} 的两个新数据集给出了不同的顺序", f"two new datasets with "
                       f"seed={s1} gave different orders") + at)
    t.expect(a != c, T(f"seed={s1} 和 seed={s2} 给出了相同的顺序：打乱要用 seed 作种子",
                       f"seed={s1} and seed={s2} gave the same order: seed the shuffle with "
                       f"seed") + at)


def global_runs(t):
    shards = make_shards(t, t.random.randint(8, 16), low=1)
    world_size, seed, epoch = t.random.randint(1, 3), new_seed(t), t.random.randrange(100)
    global_seeds = t.random.sample(range(2**31), 2)
    runs = t.sub.scenario("global_rng", shards, world_size=world_size, seed=seed, epoch=epoch,
                          global_seeds=global_seeds)
    if not (isinstance(runs, list) and len(runs) == 2
            and all(isinstance(r, dict) and "streams" in r and "changed" in r for r in runs)):
        t.fail(T("场景返回了无法识别的结果", "the scenario returned something unrecognisable"))
    at = where(shards, world_size=world_size, num_workers=0, seed=seed, epoch=epoch)
    for r in runs:
        check_partition(t, r["streams"], shards, 0, at)
    return runs, at, global_seeds


@case(zh="不改变全局随机数状态（torch、random、numpy）",
      en="the global RNG states (torch, random, numpy) are left unchanged")
def global_rng_untouched(t):
    runs, at, _ = global_runs(t)
    for r in runs:
        t.expect(not r["changed"], T(
            f"构造并迭代数据集之后，全局随机数状态变了：{r['changed']}。请用私有的 "
            f"torch.Generator / "
            f"random.Random / numpy 的 Generator", f"building and iterating the dataset changed "
            f"the global RNG state of {r['changed']}: use a private torch.Generator, "
            f"random.Random or numpy Generator") + at)


@case(zh="结果不依赖全局随机数", en="the result does not depend on the global RNGs")
def global_rng_not_used(t):
    runs, at, seeds_ = global_runs(t)
    t.expect(runs[0]["streams"] == runs[1]["streams"], T(
        f"全局随机数种子先后设为 {seeds_[0]} 和 {seeds_[1]}，结果变了：顺序只能由 (seed, epoch) "
        f"决定"
        f"（而且在 DataLoader 的 worker 里，全局随机数每个 worker 都不一样）",
        f"the global RNGs seeded with {seeds_[0]}, then {seeds_[1]}, changed the result: the "
        f"order must depend on (seed, epoch) only (and in DataLoader workers the global RNGs "
        f"differ from worker to worker)") + at)


@case(zh="worker 用 spawn 启动（数据集被 pickle 到新的解释器）",
      en="workers started with spawn (the dataset pickled into fresh interpreters)",
      timeout_s=180)
def spawn_workers(t):
    shards = make_shards(t, t.random.randint(5, 12), low=1)
    no_shuffle(t, shards, 1, 2, method="spawn")
    check_shuffled(t, shards, world_size=2, workers=2, seed=new_seed(t),
                   epoch=t.random.randrange(100), method="spawn")
