# Wrong: __len__ rounds up (ceil(N / (R * B))) while __iter__ drops the leftovers: the
# DataLoader, the LR schedule and the progress bar expect one batch that never comes.
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
        per_step = self.num_replicas * self.batch_size
        return (len(self.lengths) + per_step - 1) // per_step

    def __iter__(self):
        b, r = self.batch_size, self.num_replicas
        steps = len(self.lengths) // (r * b)
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        perm = torch.randperm(len(self.lengths), generator=g)[: steps * r * b]
        noise = torch.rand(len(perm), generator=g, dtype=torch.float64) * 0.2 + 0.9
        order = perm[torch.argsort(self.lengths[perm] * noise)]
        grid = order.view(steps, r, b)[torch.randperm(steps, generator=g)]
        yield from grid[:, self.rank].tolist()
