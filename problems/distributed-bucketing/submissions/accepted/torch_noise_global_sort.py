# Accepted: torch only. A global sort of every kept index by length x uniform(0.9, 1.1) (float
# keys), cut into steps of num_replicas * batch_size, steps shuffled; the generator is
# seeded with seed * 1_000_003 + epoch.
import torch


class DistributedBucketSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if batch_size < 1 or num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError("bad batch_size, num_replicas or rank")
        self.lengths = torch.as_tensor(lengths, dtype=torch.float64).flatten()
        self.batch_size, self.num_replicas, self.rank = batch_size, num_replicas, rank
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.lengths) // (self.batch_size * self.num_replicas)

    def __iter__(self):
        steps = len(self)
        if steps == 0:
            return iter([])
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        per_step = self.num_replicas * self.batch_size
        kept = torch.randperm(len(self.lengths), generator=g)[: steps * per_step]
        noise = torch.empty(len(kept), dtype=torch.float64).uniform_(0.9, 1.1, generator=g)
        order = kept[torch.argsort(self.lengths[kept] * noise)]
        grid = order.view(steps, self.num_replicas, self.batch_size)
        mine = grid[torch.randperm(steps, generator=g), self.rank]
        return iter(mine.tolist())
