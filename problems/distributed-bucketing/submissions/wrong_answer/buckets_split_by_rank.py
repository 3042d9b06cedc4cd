# Wrong: the sorted order is cut into one slice per rank, so rank 0 gets the shortest
# samples and the last rank the longest: at every step the others wait for it.
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
        steps, b = len(self), self.batch_size
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        perm = torch.randperm(len(self.lengths), generator=g)[: steps * self.num_replicas * b]
        order = perm[torch.argsort(self.lengths[perm], stable=True)]
        mine = order[self.rank * steps * b:(self.rank + 1) * steps * b].view(steps, b)
        yield from mine[torch.randperm(steps, generator=g)].tolist()
