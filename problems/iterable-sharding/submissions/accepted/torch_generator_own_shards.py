"""Accepted: a torch.Generator seeded with seed * 1_000_003 + epoch draws the shard order;
the same generator then draws the inner order of the consumer's own shards only (so a
shard's inner order depends on who reads it: the contract leaves that free)."""

import torch
from torch.utils.data import IterableDataset, get_worker_info


class ShardedStream(IterableDataset):
    def __init__(self, shards, *, rank=0, world_size=1, shuffle=False, seed=0):
        self.shards = shards
        self.rank = rank
        self.world_size = world_size
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        info = get_worker_info()
        workers = 1 if info is None else info.num_workers
        consumer = self.rank * workers + (0 if info is None else info.id)
        total = self.world_size * workers
        g = torch.Generator()
        g.manual_seed(self.seed * 1_000_003 + self.epoch)
        n = len(self.shards)
        order = torch.randperm(n, generator=g).tolist() if self.shuffle else list(range(n))
        for shard_index in order[consumer::total]:
            shard = self.shards[shard_index]
            if self.shuffle:
                for j in torch.randperm(len(shard), generator=g).tolist():
                    yield shard[j]
            else:
                for sample in shard:
                    yield sample
