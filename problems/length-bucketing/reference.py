"""Reference: a length-bucketed batch sampler, and the padding ratio of its batches.

shuffle=True: a seeded permutation is cut into pools of POOL_BATCHES batches; each pool is
sorted by length and cut into batches; then the order of all batches is shuffled. Sorting
inside a pool keeps the padding low, the random pools and the batch shuffle keep the
training order random.
"""

import hashlib

import torch
from torch.utils.data import Sampler

POOL_BATCHES = 64  # a pool holds this many batches' worth of indices


def epoch_generator(seed, epoch):
    """A private generator for one (seed, epoch): the global RNGs are never touched, and
    (seed, epoch) = (0, 1) and (1, 0) do not collide as they would with seed + epoch."""
    digest = hashlib.sha256(f"{seed}:{epoch}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


class BucketBatchSampler(Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        # One int64 tensor, whatever sequence came in (list, tuple or tensor).
        self.lengths = torch.as_tensor(lengths, dtype=torch.int64).reshape(-1)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        # Like DistributedSampler.set_epoch: call it before each epoch to get a new order.
        self.epoch = epoch

    def __len__(self):
        n, b = len(self.lengths), self.batch_size
        return n // b if self.drop_last else (n + b - 1) // b

    def __iter__(self):
        n, b = len(self.lengths), self.batch_size
        if not self.shuffle:
            # Deterministic: a stable sort keeps equal lengths in index order.
            order = torch.argsort(self.lengths, stable=True)
            if self.drop_last:
                order = order[: n - n % b]
            starts = list(range(0, len(order), b))
        else:
            g = epoch_generator(self.seed, self.epoch)
            order = torch.randperm(n, generator=g)
            if self.drop_last:
                # Drop random samples, not the longest ones of a pool.
                order = order[: n - n % b]
            # Sort by (pool, length) in one stable sort: the key puts every pool's indices
            # together and orders them by length inside it. Pools are whole batches, so only
            # the last pool can leave a short batch.
            longest = int(self.lengths.max()) if n else 0
            pool = torch.arange(len(order)) // (POOL_BATCHES * b)
            key = pool * (longest + 1) + self.lengths[order]
            order = order[torch.argsort(key, stable=True)]
            # Shuffle whole batches: sorted batches in a row would be a length curriculum.
            starts = (torch.randperm((len(order) + b - 1) // b, generator=g) * b).tolist()
        flat = order.tolist()  # one conversion to Python ints, then cheap list slices
        for start in starts:
            yield flat[start : start + b]


def padding_ratio(batches, lengths):
    """Padding tokens / all tokens, each batch padded to its own longest; 0.0 if no tokens."""
    real = padded = 0
    for batch in batches:
        sizes = [int(lengths[i]) for i in batch]
        if sizes:
            real += sum(sizes)
            padded += len(sizes) * max(sizes)
    return (padded - real) / padded if padded else 0.0
