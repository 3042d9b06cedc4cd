"""Reference: a length-bucketed batch sampler for data-parallel training.

Every rank computes the same global order from (seed, epoch) alone, with numpy:

1. a random permutation of the indices; its last ``N % (R * B)`` entries sit out (random
   samples, not the longest ones);
2. the permutation is cut into pools of ``POOL_STEPS`` steps (a step is ``R * B``
   indices: one batch for each of the R ranks) and every pool is sorted by length;
3. the sorted order is cut into steps, and every step into R batches of B consecutive
   indices, so that the R batches of a step come from the same stretch of lengths;
4. the steps are shuffled (the same permutation on every rank, drawn from the same
   generator), and rank r yields batch r of every step.

Sorting by (pool, length) takes two stable sorts of small unsigned keys, which numpy does
with a radix sort: linear time, several times faster than sorting a million floats.
"""

import hashlib

import numpy as np
from torch.utils.data import Sampler

POOL_STEPS = 64  # a pool holds this many steps' worth of indices


def epoch_rng(seed, epoch):
    """A private generator for one (seed, epoch), the same on every rank; the global RNGs
    are never touched, and (seed, epoch) = (0, 1) and (1, 0) do not collide."""
    digest = hashlib.sha256(f"{seed}:{epoch}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


def small_keys(values, bound):
    """values as the narrowest unsigned type that holds ``bound`` (radix sorts need 16 bits
    or less)."""
    return values.astype(np.uint16) if bound < 2**16 else values.astype(np.int64)


class DistributedBucketSampler(Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        for name, value in (("batch_size", batch_size), ("num_replicas", num_replicas),
                            ("rank", rank)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an int, got {value!r}")
        if batch_size < 1 or num_replicas < 1:
            raise ValueError("batch_size and num_replicas must be at least 1")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be in [0, {num_replicas}), got {rank}")
        # One int64 array, whatever sequence came in (list, tuple, tensor).
        self.lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
        self.batch_size = batch_size
        self.num_replicas = num_replicas
        self.rank = rank
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        # As DistributedSampler.set_epoch: every rank calls it with the same epoch.
        self.epoch = epoch

    def __len__(self):
        # The same on every rank: ranks that disagree on the number of steps hang.
        return len(self.lengths) // (self.num_replicas * self.batch_size)

    def __iter__(self):
        n, b, r = len(self.lengths), self.batch_size, self.num_replicas
        steps = n // (r * b)
        if steps == 0:
            return
        rng = epoch_rng(self.seed, self.epoch)
        kept = rng.permutation(n)[: steps * r * b]
        # Sort by (pool, length): a stable sort by length, then a stable sort by pool.
        lengths = self.lengths[kept]
        by_length = np.argsort(small_keys(lengths, int(lengths.max()) + 1), kind="stable")
        pools = by_length // (POOL_STEPS * r * b)
        by_pool = np.argsort(small_keys(pools, int(pools.max()) + 1), kind="stable")
        order = kept[by_length[by_pool]]
        # [step, rank, position]: the steps in a random order, then this rank's batches.
        mine = order.reshape(steps, r, b)[rng.permutation(steps), self.rank]
        yield from mine.tolist()  # lists of Python ints
