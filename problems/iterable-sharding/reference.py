"""Reference: an IterableDataset that splits its shards across ranks and DataLoader workers.

The consumers are the (rank, worker) pairs; consumer c = rank * num_workers + worker_id of
K reads the shards at positions c, c + K, c + 2K ... of the epoch's shard order, one whole
shard after another. Everything that decides the order is computed in __iter__, which runs
in the worker process (get_worker_info() is None in the main process, where __init__ runs),
from private generators seeded with (seed, epoch) only: every consumer computes the same
shard order, so their shards never overlap and none is left out.
"""

import hashlib

import torch
from torch.utils.data import IterableDataset, get_worker_info


def generator(*key):
    """A private torch.Generator for a key of ints: the same in every process (hash() of a
    str is not), and (1, 0) differs from (0, 1)."""
    digest = hashlib.sha256(repr(key).encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


class ShardedStream(IterableDataset):
    def __init__(self, shards, *, rank=0, world_size=1, shuffle=False, seed=0):
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, {world_size})")
        self.shards = shards
        self.rank = rank
        self.world_size = world_size
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        info = get_worker_info()  # here, in the worker: None in the main process
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        consumers = self.world_size * workers
        consumer = self.rank * workers + worker
        order = list(range(len(self.shards)))
        if self.shuffle:
            order = torch.randperm(len(order), generator=generator(self.seed, self.epoch)).tolist()
        for position in range(consumer, len(order), consumers):
            shard = self.shards[order[position]]
            if self.shuffle:
                # Seeded by the shard too: its order does not depend on who reads it.
                g = generator(self.seed, self.epoch, order[position])
                for k in torch.randperm(len(shard), generator=g).tolist():
                    yield shard[k]
            else:
                yield from shard
