# Wrong: one generator made in __init__ and drawn from on every iteration: iterating the
# same epoch twice gives different batches, and a resumed run does not see what the
# original run saw.
import torch
from torch.utils.data import Sampler


class DistributedBucketSampler(Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if batch_size < 1 or num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError("bad arguments")
        self.lengths = torch.as_tensor(lengths, dtype=torch.int64).reshape(-1)
        self.batch_size, self.num_replicas, self.rank = batch_size, num_replicas, rank
        self.g = torch.Generator().manual_seed(seed)

    def set_epoch(self, epoch):
        self.g.manual_seed(self.g.initial_seed() + epoch)

    def __len__(self):
        return len(self.lengths) // (self.num_replicas * self.batch_size)

    def __iter__(self):
        steps, b, r = len(self), self.batch_size, self.num_replicas
        perm = torch.randperm(len(self.lengths), generator=self.g)[: steps * r * b]
        noise = torch.rand(len(perm), generator=self.g, dtype=torch.float64) * 0.2 + 0.9
        order = perm[torch.argsort(self.lengths[perm] * noise)]
        grid = order.view(steps, r, b)[torch.randperm(steps, generator=self.g)]
        yield from grid[:, self.rank].tolist()
