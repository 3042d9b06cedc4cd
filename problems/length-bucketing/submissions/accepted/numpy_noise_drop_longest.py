"""Correct: numpy default_rng([seed, epoch]); sort by length * uniform(0.9, 1.1), cut into batches (drop_last drops the last, longest, short batch), shuffle the batches."""
import numpy as np
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if isinstance(lengths, torch.Tensor):
            lengths = lengths.cpu().numpy()
        self.lengths = np.asarray(lengths, dtype=np.int64).ravel()
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n, bs = len(self.lengths), self.batch_size
        return n // bs if self.drop_last else -(-n // bs)

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if self.shuffle:
            rng = np.random.default_rng([self.seed, self.epoch])
            keys = self.lengths * rng.uniform(0.9, 1.1, size=n)
            order = np.argsort(keys, kind="stable")
        else:
            rng = None
            order = np.argsort(self.lengths, kind="stable")
        stop = n - n % bs if self.drop_last else n
        flat = order[:stop].tolist()
        batches = [flat[i:i + bs] for i in range(0, stop, bs)]
        if rng is not None:
            batches = [batches[j] for j in rng.permutation(len(batches))]
        return iter(batches)


def padding_ratio(batches, lengths):
    lens = np.asarray(lengths.cpu().numpy() if isinstance(lengths, torch.Tensor) else lengths,
                      dtype=np.int64).ravel()
    padded = 0
    real = 0
    for b in batches:
        if len(b):
            l = lens[np.asarray(b, dtype=np.int64)]
            padded += int(l.max()) * len(l)
            real += int(l.sum())
    return (padded - real) / padded if padded else 0.0
