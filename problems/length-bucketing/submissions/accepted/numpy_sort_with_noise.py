# Accepted: numpy, no pools. Sort by length plus a little multiplicative noise (so the
# batches change from epoch to epoch), cut into batches, then shuffle the batches.
import numpy as np
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n = len(self.lengths)
        if self.drop_last:
            return n // self.batch_size
        return -(-n // self.batch_size)

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if self.shuffle:
            rng = np.random.default_rng([self.seed, self.epoch])
            noisy = self.lengths * rng.uniform(0.9, 1.1, size=n)
            order = np.argsort(noisy)
        else:
            order = np.argsort(self.lengths, kind="stable")
        batches = [order[i:i + bs] for i in range(0, n, bs)]
        if self.drop_last and batches and len(batches[-1]) < bs:
            batches.pop()
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        for batch in batches:
            yield batch.tolist()


def padding_ratio(batches, lengths):
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    total = real = 0
    for batch in batches:
        if len(batch) == 0:
            continue
        ls = lengths[np.asarray(batch, dtype=np.int64)]
        total += int(ls.max()) * len(ls)
        real += int(ls.sum())
    if total == 0:
        return 0.0
    return float(total - real) / total
