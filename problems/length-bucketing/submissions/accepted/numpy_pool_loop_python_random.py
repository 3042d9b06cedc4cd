"""Correct: numpy SeedSequence((seed, epoch)) permutation, pools of 100 batches each sorted with a stable np.argsort in a loop, batches shuffled with random.Random(str seed); drop_last drops the short batch of the last pool."""
import random

import numpy as np
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    batches_per_pool = 100

    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if not batch_size >= 1:
            raise ValueError("batch_size must be >= 1")
        if torch.is_tensor(lengths):
            lengths = lengths.tolist()
        self.lengths = np.array(lengths, dtype=np.int64).reshape(-1)
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n = self.lengths.shape[0]
        full, rest = divmod(n, self.batch_size)
        return full + int(rest > 0 and not self.drop_last)

    def __iter__(self):
        n, bs = self.lengths.shape[0], self.batch_size
        if self.shuffle:
            rng = np.random.default_rng(np.random.SeedSequence((self.seed, self.epoch)))
            perm = rng.permutation(n)
        else:
            perm = np.argsort(self.lengths, kind="stable")
        pool = self.batches_per_pool * bs if self.shuffle else max(n, 1)
        batches = []
        for start in range(0, n, pool):
            chunk = perm[start:start + pool]
            if self.shuffle:
                chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            flat = chunk.tolist()
            for i in range(0, len(flat), bs):
                b = flat[i:i + bs]
                if len(b) < bs and self.drop_last:
                    continue
                batches.append(b)
        if self.shuffle:
            random.Random(f"{self.seed}|{self.epoch}").shuffle(batches)
        yield from batches


def padding_ratio(batches, lengths):
    if torch.is_tensor(lengths):
        lengths = lengths.tolist()
    padded = 0
    real = 0
    for batch in batches:
        if not len(batch):
            continue
        ls = [lengths[i] for i in batch]
        padded += max(ls) * len(ls)
        real += sum(ls)
    if padded == 0:
        return 0.0
    return float(padded - real) / float(padded)
