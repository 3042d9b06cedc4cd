"""length-bucketing: a batch sampler that groups sequences of similar length.

Use it as DataLoader(dataset, batch_sampler=BucketBatchSampler(lengths, 32, seed=0),
collate_fn=...), and call sampler.set_epoch(epoch) before each epoch.
"""

import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        """lengths: the length of every sample (a list, tuple or 1-D tensor of ints).
        Raise ValueError when batch_size < 1."""
        # Keep the lengths in a form you can sort fast (a tensor or a numpy array).
        # The epoch starts at 0, as in DistributedSampler.
        raise NotImplementedError("write __init__")

    def set_epoch(self, epoch):
        """Choose the epoch whose order __iter__ yields next."""
        raise NotImplementedError("write set_epoch")

    def __len__(self):
        """The number of batches one epoch yields (mind drop_last)."""
        raise NotImplementedError("write __len__")

    def __iter__(self):
        """Yield batches: lists of Python ints (dataset indices)."""
        # shuffle=False: sort by length (ties by index), cut into batches, yield in order.
        # shuffle=True: a private generator seeded from (seed, epoch), never the global RNGs;
        #   sort inside random pools (or sort with noise), cut into batches, then shuffle
        #   the batches, so that long and short batches are mixed.
        raise NotImplementedError("write __iter__")


def padding_ratio(batches, lengths):
    """Padding tokens / all tokens when each batch is padded to its own longest sequence;
    0.0 when there are no tokens at all. Returns a Python float."""
    raise NotImplementedError("write padding_ratio")
