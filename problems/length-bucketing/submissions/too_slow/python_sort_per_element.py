# Too slow: correct, but everything is done one Python object at a time: random.shuffle
# over 100,000 indices, a lambda call per element to sort, and a shuffle of the batches.
import random

import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.lengths = [int(x) for x in lengths]
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        indices = list(range(n))
        if not self.shuffle:
            indices.sort(key=lambda i: self.lengths[i])
            batches = [indices[i:i + bs] for i in range(0, n, bs)]
        else:
            rng = random.Random(self.seed * 1_000_003 + self.epoch)
            rng.shuffle(indices)
            pool = 50 * bs
            batches = []
            for start in range(0, n, pool):
                chunk = sorted(indices[start:start + pool], key=lambda i: self.lengths[i])
                batches += [chunk[i:i + bs] for i in range(0, len(chunk), bs)]
        if self.drop_last and batches and len(batches[-1]) < bs:
            batches.pop()
        if self.shuffle:
            rng.shuffle(batches)
        yield from batches


def padding_ratio(batches, lengths):
    real = padded = 0
    for batch in batches:
        if batch:
            sizes = [int(lengths[i]) for i in batch]
            padded += max(sizes) * len(sizes)
            real += sum(sizes)
    return (padded - real) / padded if padded else 0.0
