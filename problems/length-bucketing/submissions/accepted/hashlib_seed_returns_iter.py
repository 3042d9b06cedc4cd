# Accepted: the seed comes from hashlib (the same in every process, unlike hash(str)),
# noisy sort with numpy, and __iter__ returns an iterator over a list of fresh lists
# instead of being a generator.
import hashlib

import numpy as np
import torch


def seed_of(seed, epoch):
    digest = hashlib.sha256(f"bucket/{seed}/{epoch}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if isinstance(lengths, torch.Tensor):
            lengths = lengths.tolist()
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
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if self.shuffle:
            rng = np.random.default_rng(seed_of(self.seed, self.epoch))
            order = np.argsort(self.lengths + rng.uniform(-0.5, 0.5, size=n) * self.lengths * 0.2,
                               kind="stable")
        else:
            order = np.argsort(self.lengths, kind="stable")
        flat = order.tolist()
        batches = [flat[i:i + bs] for i in range(0, n, bs)]
        if self.drop_last and batches and len(batches[-1]) < bs:
            batches.pop()
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches)).tolist()]
        return iter(batches)


def padding_ratio(batches, lengths):
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    padded = real = 0
    for b in batches:
        if len(b):
            ls = lengths[np.asarray(b, dtype=np.int64)]
            padded += int(ls.max()) * len(ls)
            real += int(ls.sum())
    return float(padded - real) / padded if padded else 0.0
