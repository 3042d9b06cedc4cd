"""Accepted: numpy generators seeded with [seed, epoch] (and the shard for its inner
order), the consumer's shards picked with itertools.islice(order, c, None, K)."""

import itertools

import numpy as np
import torch


class ShardedStream(torch.utils.data.IterableDataset):
    def __init__(self, shards, *, rank=0, world_size=1, shuffle=False, seed=0):
        self.shards, self.rank, self.world_size = shards, rank, world_size
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        n_workers = info.num_workers if info else 1
        worker_id = info.id if info else 0
        k = self.world_size * n_workers
        c = self.rank * n_workers + worker_id
        order = np.arange(len(self.shards))
        if self.shuffle:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(order)
        for s in itertools.islice(order.tolist(), c, None, k):
            shard = self.shards[s]
            if self.shuffle:
                inner = np.random.default_rng([self.seed, self.epoch, s + 1])
                for j in inner.permutation(len(shard)).tolist():
                    yield shard[j]
            else:
                yield from shard
