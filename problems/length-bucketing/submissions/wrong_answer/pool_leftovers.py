# Bug: pools hold 1000 indices, not a whole number of batches, so every pool leaves its own
# short batch: many small batches per epoch (and more batches than len() says):
# keep_last_partition.
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    POOL_SIZE = 1000

    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.lengths = torch.as_tensor(lengths, dtype=torch.int64)
        self.batch_size, self.shuffle, self.drop_last, self.seed = batch_size, shuffle, drop_last, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if not self.shuffle:
            order = torch.argsort(self.lengths, stable=True).tolist()
            batches = [order[i:i + bs] for i in range(0, n, bs)]
        else:
            g = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
            perm = torch.randperm(n, generator=g)
            batches = []
            for s in range(0, n, self.POOL_SIZE):
                pool = perm[s:s + self.POOL_SIZE]
                pool = pool[torch.argsort(self.lengths[pool], stable=True)].tolist()
                batches += [pool[i:i + bs] for i in range(0, len(pool), bs)]
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
        for b in batches:
            if len(b) == bs or not self.drop_last:
                yield b


def padding_ratio(batches, lengths):
    real = padded = 0
    for b in batches:
        if b:
            ls = [int(lengths[i]) for i in b]
            real, padded = real + sum(ls), padded + max(ls) * len(ls)
    return (padded - real) / padded if padded else 0.0
