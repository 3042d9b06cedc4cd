# Wrong: the DistributedSampler share perm[rank::R] is bucketed and batched as it is, the
# last short batch included: with N % R != 0 the ranks get different numbers of samples,
# and every rank may yield a short batch (data-parallel training hangs on uneven counts).
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
        share = -(-len(self.lengths) // self.num_replicas)  # ceil: what rank 0 gets
        return -(-share // self.batch_size)

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        perm = torch.randperm(len(self.lengths), generator=g)
        share = perm[self.rank::self.num_replicas]
        share = share[torch.argsort(self.lengths[share], stable=True)]
        batches = [share[i:i + self.batch_size].tolist()
                   for i in range(0, len(share), self.batch_size)]
        for k in torch.randperm(len(batches), generator=g).tolist():
            yield batches[k]
