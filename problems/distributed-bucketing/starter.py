"""distributed-bucketing: a length-bucketed batch sampler for data-parallel training.

Every rank (process) builds its own sampler with its own ``rank``:

    sampler = DistributedBucketSampler(lengths, 32, num_replicas=world_size, rank=rank, seed=0)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=...)
    for epoch in range(num_epochs):
        sampler.set_epoch(epoch)      # the same epoch on every rank
        for batch in loader:
            ...
"""

import torch


class DistributedBucketSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, num_replicas, rank, seed=0):
        """lengths: the length of every sample (a list, tuple or 1-D tensor of ints).
        Raise ValueError unless batch_size >= 1, num_replicas >= 1, 0 <= rank < num_replicas."""
        # The epoch starts at 0, as in DistributedSampler.
        raise NotImplementedError("write __init__")

    def set_epoch(self, epoch):
        """Choose the epoch whose order __iter__ yields next."""
        raise NotImplementedError("write set_epoch")

    def __len__(self):
        """The number of batches one epoch yields: the same on every rank."""
        raise NotImplementedError("write __len__")

    def __iter__(self):
        """Yield this rank's batches: lists of Python ints (dataset indices)."""
        # Every rank computes the SAME global order from a private generator seeded with
        # (seed, epoch) only: drop the leftovers, sort by length (in large pools, or with a
        # little noise), cut into steps of num_replicas * batch_size indices, shuffle the
        # steps, and yield this rank's batch of every step.
        raise NotImplementedError("write __iter__")
