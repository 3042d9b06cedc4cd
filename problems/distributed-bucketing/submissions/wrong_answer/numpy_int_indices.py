# Wrong: yields list(array): a list of numpy.int64, not of Python ints.
import numpy as np
from torch.utils.data import Sampler


class DistributedBucketSampler(Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if batch_size < 1 or num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError("bad arguments")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.b, self.r, self.rank, self.seed, self.epoch = batch_size, num_replicas, rank, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.lengths) // (self.b * self.r)

    def __iter__(self):
        steps = len(self)
        rng = np.random.default_rng([self.seed, self.epoch])
        perm = rng.permutation(len(self.lengths))[: steps * self.b * self.r]
        order = perm[np.argsort(self.lengths[perm] * rng.uniform(0.9, 1.1, len(perm)))]
        grid = order.reshape(steps, self.r, self.b)[rng.permutation(steps), self.rank]
        for batch in grid:
            yield list(batch)
