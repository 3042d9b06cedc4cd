# Accepted: pools of 50 steps sorted one at a time with torch.sort, steps built as Python
# lists, their order shuffled with random.Random (never the global one); the leftovers
# are the last entries of the permutation.
import random

import torch
from torch.utils.data import Sampler


class DistributedBucketSampler(Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size < 1")
        if num_replicas < 1:
            raise ValueError("num_replicas < 1")
        if rank < 0 or rank >= num_replicas:
            raise ValueError("rank out of range")
        if isinstance(lengths, torch.Tensor):
            self.lengths = lengths.to(torch.int64).reshape(-1)
        else:
            self.lengths = torch.tensor(lengths, dtype=torch.int64)
        self.bs, self.world, self.rank, self.seed = batch_size, num_replicas, rank, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.lengths) // (self.bs * self.world)

    def __iter__(self):
        per_step = self.bs * self.world
        steps = len(self)
        seed = f"{self.seed}/{self.epoch}"
        g = torch.Generator().manual_seed(random.Random(seed).getrandbits(63))
        perm = torch.randperm(len(self.lengths), generator=g)[: steps * per_step]
        mine = []
        pool_size = 50 * per_step
        for start in range(0, len(perm), pool_size):
            pool = perm[start:start + pool_size]
            _, idx = torch.sort(self.lengths[pool])
            pool = pool[idx].view(-1, self.world, self.bs)
            mine.extend(pool[:, self.rank].tolist())
        random.Random(seed).shuffle(mine)
        yield from mine
