"""Accepted: numpy. Lengths with multiplicative noise sorted once (float keys), the random
leftovers removed with a boolean mask, steps shuffled with a numpy Generator seeded from
the pair (seed, epoch)."""
import numpy as np
from torch.utils.data import Sampler


class DistributedBucketSampler(Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        if num_replicas <= 0 or rank < 0 or rank >= num_replicas:
            raise ValueError("need 0 <= rank < num_replicas")
        self.lengths = np.array(lengths, dtype=np.float64)
        self.b, self.r, self.rank, self.seed = batch_size, num_replicas, rank, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __len__(self):
        return self.lengths.size // (self.b * self.r)

    def __iter__(self):
        n, step = self.lengths.size, self.b * self.r
        steps = n // step
        rng = np.random.default_rng([self.seed, self.epoch])
        keep = np.ones(n, dtype=bool)
        keep[rng.choice(n, size=n - steps * step, replace=False)] = False  # random leftovers
        keys = self.lengths * rng.uniform(0.9, 1.1, size=n)
        order = np.argsort(keys)
        order = order[keep[order]]
        for s in rng.permutation(steps):
            start = s * step + self.rank * self.b
            yield order[start:start + self.b].tolist()
