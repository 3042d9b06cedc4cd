# Too slow: correct, but everything one Python object at a time: random.Random.shuffle of a
# million indices, a noise key drawn per element, sorted(key=...), steps cut with slices.
import random

from torch.utils.data import Sampler


class DistributedBucketSampler(Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if batch_size < 1 or num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError("bad arguments")
        self.lengths = [int(x) for x in lengths]
        self.batch_size, self.num_replicas, self.rank = batch_size, num_replicas, rank
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.lengths) // (self.num_replicas * self.batch_size)

    def __iter__(self):
        rnd = random.Random(f"{self.seed}-{self.epoch}")
        per_step = self.num_replicas * self.batch_size
        steps = len(self)
        indices = list(range(len(self.lengths)))
        rnd.shuffle(indices)
        indices = indices[: steps * per_step]
        keys = {i: self.lengths[i] * rnd.uniform(0.9, 1.1) for i in indices}
        indices.sort(key=lambda i: keys[i])
        order = list(range(steps))
        rnd.shuffle(order)
        for s in order:
            start = s * per_step + self.rank * self.batch_size
            yield indices[start:start + self.batch_size]
