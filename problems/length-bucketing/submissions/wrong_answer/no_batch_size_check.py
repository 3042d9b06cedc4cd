# Bug: no check of batch_size, so BucketBatchSampler(lengths, 0) is accepted and fails
# later with ZeroDivisionError (or loops forever) instead of a clear ValueError:
# invalid_batch_size.
import numpy as np
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        self.lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
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
            rng = np.random.default_rng([self.seed, self.epoch])
            order = np.argsort(self.lengths * rng.uniform(0.9, 1.1, size=n))
        else:
            order = np.argsort(self.lengths, kind="stable")
        batches = [order[i:i + bs].tolist() for i in range(0, n, bs)]
        if self.drop_last and batches and len(batches[-1]) < bs:
            batches.pop()
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        yield from batches


def padding_ratio(batches, lengths):
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    padded = real = 0
    for b in batches:
        if len(b):
            ls = lengths[np.asarray(b, dtype=np.int64)]
            padded += int(ls.max()) * len(ls)
            real += int(ls.sum())
    return (padded - real) / padded if padded else 0.0
