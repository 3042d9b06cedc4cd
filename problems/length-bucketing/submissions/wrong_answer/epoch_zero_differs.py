# Bug: the generator's seed is only mixed with the epoch inside set_epoch, so a sampler
# that was never given set_epoch(0) yields another order than one that was. A resumed or
# evaluation run that skips set_epoch(0) silently differs: reproducible.
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.lengths = torch.as_tensor(lengths, dtype=torch.int64)
        self.batch_size, self.shuffle, self.drop_last, self.seed = batch_size, shuffle, drop_last, seed
        self.generator_seed = seed

    def set_epoch(self, epoch):
        self.generator_seed = self.seed * 100_003 + epoch

    def __len__(self):
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if self.shuffle:
            g = torch.Generator().manual_seed(self.generator_seed)
            perm = torch.randperm(n, generator=g)
            pool = torch.arange(n) // (64 * bs)
            key = pool * (int(self.lengths.max()) + 1 if n else 1) + self.lengths[perm]
            order = perm[torch.argsort(key, stable=True)]
            starts = (torch.randperm(-(-n // bs), generator=g) * bs).tolist()
        else:
            order = torch.argsort(self.lengths, stable=True)
            starts = list(range(0, n, bs))
        flat = order.tolist()
        for s in starts:
            batch = flat[s:s + bs]
            if len(batch) == bs or not self.drop_last:
                yield batch


def padding_ratio(batches, lengths):
    real = padded = 0
    for b in batches:
        if b:
            ls = [int(lengths[i]) for i in b]
            real, padded = real + sum(ls), padded + max(ls) * len(ls)
    return (padded - real) / padded if padded else 0.0
