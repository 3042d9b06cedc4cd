"""Accepted: one random.Random seeded with the string "seed/epoch" (seeded through sha512,
the same in every process) draws the shard order and then every shard's inner order in
the epoch's order; each consumer replays all of it and keeps its own shards. __iter__
returns an iterator object instead of being a generator."""

import random

from torch.utils.data import IterableDataset, get_worker_info


class _Samples:
    def __init__(self, parts):
        self.parts = parts
        self.shard, self.pos = 0, 0

    def __iter__(self):
        return self

    def __next__(self):
        while self.shard < len(self.parts):
            part = self.parts[self.shard]
            if self.pos < len(part):
                self.pos += 1
                return part[self.pos - 1]
            self.shard, self.pos = self.shard + 1, 0
        raise StopIteration


class ShardedStream(IterableDataset):
    def __init__(self, shards, *, rank=0, world_size=1, shuffle=False, seed=0):
        self.shards = [list(s) for s in shards]
        self.rank, self.world_size = rank, world_size
        self.shuffle, self.seed = shuffle, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        worker = get_worker_info()
        per_rank = 1 if worker is None else worker.num_workers
        me = self.rank * per_rank + (0 if worker is None else worker.id)
        everyone = self.world_size * per_rank
        order = list(range(len(self.shards)))
        parts = [list(s) for s in self.shards]
        if self.shuffle:
            rng = random.Random(f"{self.seed}/{self.epoch}")
            rng.shuffle(order)
            for s in order:
                rng.shuffle(parts[s])
        mine = [parts[order[p]] for p in range(len(order)) if p % everyone == me]
        return _Samples(mine)
