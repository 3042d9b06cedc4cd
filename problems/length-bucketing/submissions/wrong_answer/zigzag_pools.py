"""Bug: pools are sorted and their batches yielded in pool order, alternating ascending and descending pools (a zigzag curriculum instead of shuffled batches)."""
import numpy as np
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    POOL = 64  # batches per pool

    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if isinstance(lengths, torch.Tensor):
            lengths = lengths.cpu().numpy()
        self.lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n, bs = len(self.lengths), self.batch_size
        return n // bs if self.drop_last else (n + bs - 1) // bs

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if not self.shuffle:
            order = np.argsort(self.lengths, kind="stable")
            if self.drop_last:
                order = order[: n - n % bs]
            flat = order.tolist()
            return iter([flat[i:i + bs] for i in range(0, len(flat), bs)])
        rng = np.random.default_rng([self.seed, self.epoch])
        perm = rng.permutation(n)
        if self.drop_last:
            perm = perm[: n - n % bs]
        pool = self.POOL * bs
        batches = []
        for k, s in enumerate(range(0, len(perm), pool)):
            chunk = perm[s:s + pool]
            flat = chunk[np.argsort(self.lengths[chunk], kind="stable")].tolist()
            pb = [flat[i:i + bs] for i in range(0, len(flat), bs)]
            batches += pb if k % 2 == 0 else pb[::-1]
        return iter(batches)


def padding_ratio(batches, lengths):
    if isinstance(lengths, torch.Tensor):
        lengths = lengths.tolist()
    tot = real = 0
    for b in batches:
        if len(b):
            ls = [lengths[i] for i in b]
            tot += max(ls) * len(ls)
            real += sum(ls)
    return (tot - real) / tot if tot else 0.0
