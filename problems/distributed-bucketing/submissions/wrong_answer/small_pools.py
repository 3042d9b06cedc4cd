# Wrong: pools of 4 steps. Every pool ends with a step of its longest samples, whose ranks
# differ widely, and with so few steps per pool those steps dominate: the ranks fall out of
# step.
import torch
from torch.utils.data import Sampler


class DistributedBucketSampler(Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if batch_size < 1 or num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError("bad arguments")
        self.lengths = torch.as_tensor(lengths, dtype=torch.int64).reshape(-1)
        self.batch_size, self.num_replicas, self.rank = batch_size, num_replicas, rank
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.lengths) // (self.num_replicas * self.batch_size)

    def __iter__(self):
        steps, b, r = len(self), self.batch_size, self.num_replicas
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        perm = torch.randperm(len(self.lengths), generator=g)[: steps * r * b]
        pool = torch.arange(len(perm)) // (4 * r * b)
        key = pool * (int(self.lengths.max()) + 1) + self.lengths[perm] if len(perm) else pool
        order = perm[torch.argsort(key, stable=True)]
        grid = order.view(steps, r, b)[torch.randperm(steps, generator=g)]
        yield from grid[:, self.rank].tolist()
