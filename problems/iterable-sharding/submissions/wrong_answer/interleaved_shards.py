"""Wrong: reads its shards round-robin (one sample of each in turn) instead of one whole
shard after another."""

import hashlib
import itertools

import torch
from torch.utils.data import IterableDataset, get_worker_info

_MISSING = object()


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
        mine = []
        for position in range(consumer, len(order), consumers):
            shard = self.shards[order[position]]
            if self.shuffle:
                g = generator(self.seed, self.epoch, order[position])
                shard = [shard[k] for k in torch.randperm(len(shard), generator=g).tolist()]
            mine.append(shard)
        for row in itertools.zip_longest(*mine, fillvalue=_MISSING):
            yield from (s for s in row if s is not _MISSING)
