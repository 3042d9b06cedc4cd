# Bug: drop_last is only applied on the shuffle=False path; with shuffle=True the short
# batch is still yielded: drop_last_partition.
import numpy as np
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
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
        if not self.shuffle:
            order = np.argsort(self.lengths, kind="stable")
            stop = n - n % bs if self.drop_last else n
            for i in range(0, stop, bs):
                yield order[i:i + bs].tolist()
            return
        rng = np.random.default_rng([self.seed, self.epoch])
        perm = rng.permutation(n)
        step = 64 * bs
        batches = []
        for s in range(0, n, step):
            pool = perm[s:s + step]
            pool = pool[np.argsort(self.lengths[pool], kind="stable")]
            batches += [pool[i:i + bs].tolist() for i in range(0, len(pool), bs)]
        for i in rng.permutation(len(batches)):
            yield batches[i]


def padding_ratio(batches, lengths):
    lengths = np.asarray(lengths, dtype=np.int64)
    padded = real = 0
    for b in batches:
        if len(b):
            ls = lengths[np.asarray(b)]
            padded += int(ls.max()) * len(ls)
            real += int(ls.sum())
    return (padded - real) / padded if padded else 0.0
