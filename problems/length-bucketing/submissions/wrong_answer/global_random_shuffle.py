# Bug: the pools come from a private generator, but the batches are shuffled with Python's
# global RNG after random.seed(...): the order is reproducible, yet the user's global
# `random` state is overwritten every epoch: global_rng_untouched.
import random

import numpy as np
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size < 1")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size, self.shuffle, self.drop_last, self.seed = batch_size, shuffle, drop_last, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if self.shuffle:
            rng = np.random.default_rng([self.seed, self.epoch])
            perm = rng.permutation(n)
            pools = [perm[i:i + 50 * bs] for i in range(0, n, 50 * bs)]
            order = np.concatenate([p[np.argsort(self.lengths[p], kind="stable")] for p in pools]
                                   or [np.zeros(0, dtype=np.int64)])
        else:
            order = np.argsort(self.lengths, kind="stable")
        batches = [order[i:i + bs].tolist() for i in range(0, n, bs)]
        if self.drop_last and batches and len(batches[-1]) < bs:
            batches.pop()
        if self.shuffle:
            random.seed(self.seed + self.epoch)
            random.shuffle(batches)
        return iter(batches)


def padding_ratio(batches, lengths):
    lengths = np.asarray(lengths)
    total = sum(len(b) * int(lengths[b].max()) for b in batches if len(b))
    real = sum(int(lengths[b].sum()) for b in batches if len(b))
    return float(total - real) / total if total else 0.0
