# Wrong: no argument checks: rank = num_replicas (ranks count from 0) is accepted and yields
# nothing (or another rank's batches), instead of raising ValueError.
import torch
from torch.utils.data import Sampler


class DistributedBucketSampler(Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size < 1")
        self.lengths = torch.as_tensor(lengths, dtype=torch.int64).reshape(-1)
        self.batch_size, self.num_replicas, self.rank = batch_size, max(num_replicas, 1), rank
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.lengths) // (self.num_replicas * self.batch_size)

    def __iter__(self):
        steps, b, r = len(self), self.batch_size, self.num_replicas
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        perm = torch.randperm(len(self.lengths), generator=g)[: steps * r * b]
        noise = torch.rand(len(perm), generator=g, dtype=torch.float64) * 0.2 + 0.9
        order = perm[torch.argsort(self.lengths[perm] * noise)]
        grid = order.view(steps, r, b)[torch.randperm(steps, generator=g)]
        yield from grid[:, self.rank % r].tolist() if self.rank < r else iter(())
