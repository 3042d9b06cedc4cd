"""Scenarios for iterable-sharding. They run INSIDE the sandbox, next to the submission.

One process simulates every rank: for each rank it builds the learner's ShardedStream with
that rank and iterates it through a real DataLoader (batch_size=None, num_workers worker
processes), tagging every sample with the id of the worker that produced it. What comes
back is plain data, checked by the grader; nothing returned from here is trusted.
"""

import random

import torch
from torch.utils.data import DataLoader

try:  # numpy is optional: its global RNG is checked when it is installed
    import numpy
except ImportError:  # pragma: no cover - depends on the machine
    numpy = None

LIMIT = 200_000  # more samples than that: an endless iterator


class Tagged:
    """collate_fn, run in the worker: the sample with the worker's id (0 without workers).
    At module level so that spawn can unpickle it."""

    def __call__(self, sample):
        info = torch.utils.data.get_worker_info()
        return [info.id if info is not None else 0, sample]


def failure(e):
    return {"raised": type(e).__name__, "message": str(e)[:300]}


def drain(iterable):
    out = []
    for item in iterable:
        out.append(item)
        if len(out) > LIMIT:
            raise RuntimeError(f"more than {LIMIT} samples: does __iter__ ever stop?")
    return out


def consume(sol, ctx, shards, *, world_size, workers, shuffle=False, seed=0, epochs=(0,),
            method="fork"):
    """For every rank: one ShardedStream, and for every entry of ``epochs`` (None: iterate
    again without set_epoch) one pass of a DataLoader over it. Returns, per rank, per
    epoch, the [worker, sample] pairs in the order the loader delivered them."""
    ranks = []
    for rank in range(world_size):
        try:
            ds = sol.ShardedStream(shards, rank=rank, world_size=world_size, shuffle=shuffle,
                                   seed=seed)
        except Exception as e:
            return {"built": failure(e), "rank": rank}
        if not isinstance(ds, torch.utils.data.IterableDataset):
            return {"not_iterable": type(ds).__name__}
        loader = DataLoader(ds, batch_size=None, num_workers=workers, collate_fn=Tagged(),
                            multiprocessing_context=method if workers else None)
        passes = []
        for epoch in epochs:
            if epoch is not None:
                ds.set_epoch(epoch)
            try:
                passes.append(drain(loader))
            except Exception as e:
                return {"failed": failure(e), "rank": rank, "epoch": epoch}
        ranks.append(passes)
    return {"ranks": ranks}


def global_states():
    states = {"torch": torch.get_rng_state(), "random": random.getstate()}
    if numpy is not None:
        states["numpy"] = numpy.random.get_state()
    return states


def same_state(name, a, b):
    if name == "torch":
        return torch.equal(a, b)
    if name == "numpy":
        return a[0] == b[0] and bool((a[1] == b[1]).all()) and a[2:] == b[2:]
    return a == b


def seed_globals(value):
    torch.manual_seed(value)
    random.seed(value)
    if numpy is not None:
        numpy.random.seed(value % 2**32)


def global_rng(sol, ctx, shards, *, world_size, seed, epoch, global_seeds):
    """For each global seed: seed torch's, Python's and numpy's global RNGs with it, then
    build every rank's stream and iterate it in this process (no workers). Returns the
    streams and which global RNG states changed."""
    runs = []
    for value in global_seeds:
        seed_globals(value)
        before = global_states()
        streams = []
        for rank in range(world_size):
            ds = sol.ShardedStream(shards, rank=rank, world_size=world_size, shuffle=True,
                                   seed=seed)
            ds.set_epoch(epoch)
            streams.append(drain(iter(ds)))
        after = global_states()
        changed = [k for k in before if not same_state(k, before[k], after[k])]
        runs.append({"streams": streams, "changed": changed})
    return runs
