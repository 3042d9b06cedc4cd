"""Too slow: correct, but pools are sorted with sorted(pool, key=lengths.__getitem__) in
Python (a C key, still a million Python comparisons), after a Python shuffle."""
import random

from torch.utils.data import Sampler

POOL_STEPS = 64


class DistributedBucketSampler(Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if batch_size < 1 or num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError("bad arguments")
        self.lengths = list(lengths) if not hasattr(lengths, "tolist") else lengths.tolist()
        self.b, self.r, self.rank, self.seed, self.epoch = batch_size, num_replicas, rank, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.lengths) // (self.b * self.r)

    def __iter__(self):
        rnd = random.Random(self.seed * 7919 + self.epoch)
        per_step, steps = self.b * self.r, len(self)
        perm = rnd.sample(range(len(self.lengths)), steps * per_step)
        mine = []
        for start in range(0, len(perm), POOL_STEPS * per_step):
            pool = sorted(perm[start:start + POOL_STEPS * per_step],
                          key=self.lengths.__getitem__)
            for s in range(0, len(pool), per_step):
                mine.append(pool[s + self.rank * self.b: s + (self.rank + 1) * self.b])
        rnd.shuffle(mine)
        return iter(mine)
