"""Scenarios for jsonl-dataset. They run INSIDE the sandbox, next to the submission.

The judge writes every data file itself (fresh for every submission) into the runner's
folder and passes its name. A scenario builds the dataset, reads it the way a training
loop does (directly, through a DataLoader with worker processes, after pickling) and
returns plain data: the records, or, for an index that raised, ``{"raised": type name,
"message": ...}``. The grader checks everything; nothing returned from here is trusted.
"""

import gc
import json
import os
import pickle

import torch
from torch.utils.data import DataLoader, RandomSampler

MAX_MESSAGE = 300


# ---------------------------------------------------------------- transforms
# Defined at module level so that a DataLoader worker started with spawn can unpickle them.


class Wrap:
    """A transform whose result is not a record: applying it twice nests it."""

    def __call__(self, record):
        return {"wrapped": record}


class Counting:
    """Records every call: how many, and what it was given (in this process)."""

    def __init__(self):
        self.calls = []

    def __call__(self, record):
        self.calls.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
        return {"wrapped": record}


TRANSFORMS = {None: lambda: None, "wrap": Wrap}


def failure(e):
    return {"raised": type(e).__name__, "message": str(e)[:MAX_MESSAGE]}


def read_all(ds, indices):
    """ds[i] for each index; an exception becomes a record of what was raised."""
    out = []
    for i in indices:
        try:
            out.append({"value": ds[i]})
        except Exception as e:  # the grader decides which exceptions were right
            out.append(failure(e))
    return out


def build(sol, path, transform=None):
    try:
        return sol.JsonlDataset(path, transform=TRANSFORMS[transform]()), None
    except Exception as e:
        return None, failure(e)


# ---------------------------------------------------------------- scenarios


def read(sol, ctx, path, indices, *, transform=None):
    """len(dataset), then dataset[i] for every index (the same dataset throughout)."""
    ds, error = build(sol, path, transform)
    if error is not None:
        return {"built": error}
    return {"len": len(ds), "items": read_all(ds, indices)}


def transform_calls(sol, ctx, path, indices):
    """A counting transform: calls made by __init__, by each read, and their arguments."""
    counting = Counting()
    ds = sol.JsonlDataset(path, transform=counting)
    at_init = list(counting.calls)
    reads = []
    for i in indices:
        before = len(counting.calls)
        value = ds[i]
        reads.append({"value": value, "calls": counting.calls[before:]})
    return {"at_init": at_init, "reads": reads}


def pickled(sol, ctx, path, indices, *, reads_before):
    """Read some records, pickle the dataset (as spawn does), and read from the copy."""
    ds = sol.JsonlDataset(path, transform=Wrap())
    read_all(ds, reads_before)
    try:
        copy = pickle.loads(pickle.dumps(ds))
    except Exception as e:
        return {"pickle": failure(e)}
    return {"len": len(copy), "items": read_all(copy, indices)}


class Tagged:
    """The DataLoader's collate_fn: each record with the id of the worker that read it."""

    def __call__(self, batch):
        info = torch.utils.data.get_worker_info()
        worker = info.id if info is not None else -1
        return [{"worker": worker, "pid": os.getpid(), "value": value} for value in batch]


class Recording(RandomSampler):
    """shuffle=True's sampler, keeping the order of the indices it hands out (in the main
    process: a map-style DataLoader samples there and sends the indices to its workers)."""

    def __iter__(self):
        self.order = []
        for i in super().__iter__():
            self.order.append(i)
            yield i


def loader(sol, ctx, path, *, method, workers, batch_size, seed, transform=None,
           epochs=1):
    """A real DataLoader over the dataset with a shuffling sampler and ``workers`` worker
    processes started by ``method``, for some epochs. Every record comes back with the
    worker that read it, and every epoch with the order of the indices asked for."""
    ds, error = build(sol, path, transform)
    if error is not None:
        return {"built": error}
    sampler = Recording(ds, generator=torch.Generator().manual_seed(seed))
    load = DataLoader(ds, batch_size=batch_size, sampler=sampler, num_workers=workers,
                      multiprocessing_context=method if workers else None,
                      collate_fn=Tagged())
    out = {"len": len(ds), "main": os.getpid(), "epochs": []}
    for _ in range(epochs):
        items = []
        try:
            for batch in load:
                items.extend(batch)
        except Exception as e:
            out["failed"] = failure(e)
            return out
        out["epochs"].append({"order": sampler.order, "items": items})
    return out


def status():
    """This process's resident memory (the grader's fallback where it cannot measure the
    job from outside)."""
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields.get("RssAnon", fields.get("VmRSS", "0 kB")).split()[0]) * 1024


def hold(sol, ctx, path, indices):
    """Build the dataset, read some records, and let the grader measure the memory
    before, after __init__ and after the reads (it answers each question when it has)."""
    gc.collect()
    ctx.ask({"moment": "before", "rss": status()})
    ds = sol.JsonlDataset(path)
    gc.collect()
    ctx.ask({"moment": "built", "rss": status(), "len": len(ds)})
    items = read_all(ds, indices)
    gc.collect()
    ctx.ask({"moment": "read", "rss": status()})
    return {"len": len(ds), "items": items}


# ---------------------------------------------------------------- throughput


def prepare_reads(sol, ctx, path, indices):
    """Untimed: nothing to build, the timed call makes the dataset itself."""
    return {"path": path, "indices": indices}


def read_many(sol, ctx, state):
    """Timed: build the dataset (its index) and read every index, as a training loop with
    a shuffling sampler would. Returns a digest of every record and a few in full."""
    ds = sol.JsonlDataset(state["path"])
    ids, sizes, shown = 0, 0, []
    for k, i in enumerate(state["indices"]):
        record = ds[i]
        ids += record["id"] * (k + 1)
        sizes += len(record["text"]) + len(record["tokens"])
        if k % 1000 == 0:
            shown.append(record)
    return {"len": len(ds), "ids": ids, "sizes": sizes, "shown": shown}
