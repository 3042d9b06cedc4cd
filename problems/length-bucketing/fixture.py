"""Scenarios for length-bucketing. They run INSIDE the sandbox, next to the submission.

A sampler is an object, so it cannot cross the judge's protocol: every scenario builds it
here from plain arguments, iterates it the way a training loop does (``set_epoch`` before
each epoch) and returns plain data. The batches of an epoch come back compactly, as
``{"flat": int64 tensor of every yielded index in order, "sizes": int64 tensor of the batch
sizes}``, so 100,000 indices cost 800 KB, not 100,000 JSON numbers. The grader checks
everything; nothing returned from here is trusted.
"""

import itertools
import random
from array import array

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

try:  # numpy is optional: its global RNG is checked when it is installed
    import numpy
except ImportError:  # pragma: no cover - depends on the machine
    numpy = None


# ---------------------------------------------------------------- helpers


def as_lengths(lengths, kind):
    """The lengths (an int64 tensor on the wire) as the type the case asks for."""
    if kind == "tensor":
        return lengths.clone()
    if kind == "tuple":
        return tuple(lengths.tolist())
    return lengths.tolist()


def build(sol, lengths, batch_size, kind="list", **options):
    return sol.BucketBatchSampler(as_lengths(lengths, kind), batch_size, **options)


def record(batches, limit, check_types=True):
    """Consume an iterable of batches into {"flat", "sizes"}, or {"bad": ...} describing
    the first batch that is not a list of Python ints. Stops after ``limit`` batches so an
    endless iterator is reported, not waited for."""
    flat, sizes = array("q"), array("q")
    for k, batch in enumerate(batches):
        if k >= limit:
            return {"bad": {"what": "too_many", "limit": limit}}
        if check_types:
            if type(batch) is not list:
                return {"bad": {"what": "batch_type", "batch": k, "type": type_name(batch)}}
            for j, index in enumerate(batch):
                if type(index) is not int:
                    return {"bad": {"what": "index_type", "batch": k, "position": j,
                                    "type": type_name(index), "repr": repr(index)[:60]}}
        flat.extend(batch)
        sizes.append(len(batch))
    return {"flat": to_tensor(flat), "sizes": to_tensor(sizes)}


def to_tensor(values):
    # frombuffer shares the array's memory; clone so the tensor owns its own.
    if not values:
        return torch.zeros(0, dtype=torch.int64)
    return torch.frombuffer(values, dtype=torch.int64).clone()


def type_name(value):
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def batch_limit(n):
    return n + 10  # more batches than indices means an endless (or broken) iterator


def global_rng_states():
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


# ---------------------------------------------------------------- scenarios


def run_epochs(sol, ctx, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0,
               epochs=(0,), kind="list", hold=False):
    """Build one sampler; report len() before iterating, then for each entry of ``epochs``
    call set_epoch(entry) (None: iterate again without calling it) and record the epoch,
    one batch at a time. With ``hold``, iterate the epoch once more holding every batch at
    once, as ``list(sampler)`` does, and record that too (under "held")."""
    sampler = build(sol, lengths, batch_size, kind, shuffle=shuffle, drop_last=drop_last,
                    seed=seed)
    len_before = len(sampler)
    limit = batch_limit(len(lengths))
    recorded, held = [], []
    for epoch in epochs:
        if epoch is not None:
            sampler.set_epoch(epoch)
        recorded.append(record(iter(sampler), limit))
        if hold:
            # list(sampler), bounded: an endless iterator is reported, not waited for
            held.append(record(list(itertools.islice(sampler, limit + 1)), limit))
    return {"len_before": len_before, "len_after": len(sampler), "epochs": recorded,
            "held": held, "is_sampler": isinstance(sampler, Sampler)}


def global_rng(sol, ctx, lengths, batch_size, *, seed, epoch, global_seeds):
    """For each value in ``global_seeds``: seed torch's, Python's and numpy's global RNGs
    with it, build a sampler, set its epoch and iterate. Record the batches and which
    global RNG states differ afterwards (construction and iteration both count)."""
    runs = []
    for value in global_seeds:
        seed_globals(value)
        before = global_rng_states()
        sampler = build(sol, lengths, batch_size, shuffle=True, seed=seed)
        sampler.set_epoch(epoch)
        batches = record(iter(sampler), batch_limit(len(lengths)))
        len(sampler)
        after = global_rng_states()
        changed = [name for name in before if not same_state(name, before[name], after[name])]
        runs.append({"batches": batches, "changed": changed})
    return runs


class TokenDataset(Dataset):
    """Sample i is a sequence of lengths[i] tokens that remembers its index."""

    def __init__(self, lengths):
        self.lengths = lengths

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        return {"index": i, "input_ids": torch.full((self.lengths[i],), 7, dtype=torch.long)}


def pad_collate(samples):
    longest = max(len(s["input_ids"]) for s in samples)
    ids = torch.zeros(len(samples), longest, dtype=torch.long)
    for row, s in enumerate(samples):
        ids[row, : len(s["input_ids"])] = s["input_ids"]
    return {"index": torch.tensor([s["index"] for s in samples]), "input_ids": ids}


def dataloader(sol, ctx, lengths, batch_size, *, seed, epochs, drop_last=False):
    """Drive a real DataLoader(dataset, batch_sampler=sampler, collate_fn=pad_collate) for
    several epochs; record what it delivered, the padded widths, and the batches the
    sampler yields when iterated directly in the same epoch."""
    plain = lengths.tolist()
    sampler = sol.BucketBatchSampler(plain, batch_size, shuffle=True, drop_last=drop_last,
                                     seed=seed)
    loader = DataLoader(TokenDataset(plain), batch_sampler=sampler, collate_fn=pad_collate)
    out = {"is_sampler": isinstance(sampler, Sampler), "len_loader": len(loader),
           "len_sampler": len(sampler), "epochs": []}
    for epoch in epochs:
        loader.batch_sampler.set_epoch(epoch)
        delivered, widths = [], []
        for batch in loader:
            delivered.append(batch["index"].tolist())
            widths.append(batch["input_ids"].shape[1])
        got = record(delivered, batch_limit(len(plain)), check_types=False)
        direct = record(iter(sampler), batch_limit(len(plain)))
        out["epochs"].append({"loader": got, "widths": torch.tensor(widths, dtype=torch.int64),
                              "direct": direct})
    return out


# ---------------------------------------------------------------- throughput


def prepare_epoch(sol, ctx, lengths, batch_size, seed, epoch):
    """Untimed: turn the lengths into the plain list a dataset would hold."""
    return {"lengths": lengths.tolist(), "batch_size": batch_size, "seed": seed,
            "epoch": epoch}


def one_epoch(sol, ctx, state):
    """Timed: build the sampler and iterate one epoch, as a training loop would (one batch
    at a time, nothing kept but the indices)."""
    sampler = sol.BucketBatchSampler(state["lengths"], state["batch_size"], shuffle=True,
                                     seed=state["seed"])
    sampler.set_epoch(state["epoch"])
    batches = record(iter(sampler), batch_limit(len(state["lengths"])), check_types=False)
    return {"len": len(sampler), **batches}
