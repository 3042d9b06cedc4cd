"""Bug: __iter__ fills one list, yields it and clears it for the next batch. A loop that
uses each batch before asking for the next sees the right batches; list(sampler), which
holds them all, gets the same (emptied) list over and over."""
import numpy as np
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    POOL = 50  # batches per pool

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
            rng = np.random.default_rng([self.seed, self.epoch])
            perm = rng.permutation(n)
            pool = self.POOL * bs
            cuts = []
            for start in range(0, n, pool):
                chunk = perm[start:start + pool]
                chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
                cuts += [chunk[i:i + bs] for i in range(0, len(chunk), bs)]
            cuts = [cuts[i] for i in rng.permutation(len(cuts))]
        else:
            order = np.argsort(self.lengths, kind="stable")
            cuts = [order[i:i + bs] for i in range(0, n, bs)]
        batch = []  # one list, reused for every batch
        for cut in cuts:
            if self.drop_last and len(cut) < bs:
                continue
            batch.extend(cut.tolist())
            yield batch
            batch.clear()


def padding_ratio(batches, lengths):
    lengths = [int(x) for x in lengths]
    padded = real = 0
    for b in batches:
        if b:
            ls = [lengths[i] for i in b]
            padded += max(ls) * len(ls)
            real += sum(ls)
    return (padded - real) / padded if padded else 0.0
