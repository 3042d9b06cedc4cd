# Bug: random pools, each sorted by length, but the batches are yielded pool after pool in
# sorted order: a sawtooth of short-to-long runs, a length curriculum inside every pool
# (the spec's "batch order not sorted by length"): batches_mixed.
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
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
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
            order = torch.randperm(n, generator=g)
            if self.drop_last:
                order = order[: n - n % bs]
            pool = torch.arange(len(order)) // (64 * bs)
            key = pool * (int(self.lengths.max()) + 1 if n else 1) + self.lengths[order]
            order = order[torch.argsort(key, stable=True)]
        else:
            order = torch.argsort(self.lengths, stable=True)
            if self.drop_last:
                order = order[: n - n % bs]
        flat = order.tolist()
        for s in range(0, len(flat), bs):
            yield flat[s:s + bs]


def padding_ratio(batches, lengths):
    real = padded = 0
    for b in batches:
        if b:
            ls = [int(lengths[i]) for i in b]
            real, padded = real + sum(ls), padded + max(ls) * len(ls)
    return (padded - real) / padded if padded else 0.0
