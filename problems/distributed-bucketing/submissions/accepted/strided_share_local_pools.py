# Accepted: DistributedSampler-style. Every rank takes its strided share perm[rank::R] of one
# shared permutation, sorts it in pools of 64 batches, and shuffles its batches with the
# same generator state on every rank: equal shares give equal permutations, so at step k
# every rank yields the batch of the same length quantile of the same pool.
import torch


class DistributedBucketSampler(torch.utils.data.Sampler):
    POOL = 64  # batches per pool

    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        if not (batch_size >= 1 and num_replicas >= 1 and 0 <= rank < num_replicas):
            raise ValueError("invalid sampler arguments")
        self.lengths = torch.tensor(list(lengths), dtype=torch.int64)
        self.batch_size, self.num_replicas, self.rank = batch_size, num_replicas, rank
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.lengths) // self.num_replicas // self.batch_size

    def __iter__(self):
        b, count = self.batch_size, len(self)
        g = torch.Generator()
        g.manual_seed(hash((self.seed, self.epoch)) & 0x7FFF_FFFF_FFFF_FFFF)
        perm = torch.randperm(len(self.lengths), generator=g)
        share = perm[self.rank::self.num_replicas][: count * b]
        batches = []
        for start in range(0, len(share), self.POOL * b):
            pool = share[start:start + self.POOL * b]
            pool = pool[torch.argsort(self.lengths[pool], stable=True)]
            batches.extend(pool.view(-1, b).tolist())
        for k in torch.randperm(len(batches), generator=g).tolist():
            yield batches[k]
