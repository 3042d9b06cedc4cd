"""iterable-sharding: a stream over shards (files) for several ranks and DataLoader workers.

Every rank builds ShardedStream(shards, rank=rank, world_size=world_size, ...) and iterates
DataLoader(stream, batch_size=..., num_workers=...): each DataLoader worker gets a copy of
the dataset and calls iter() on it in its own process.
"""

import torch
from torch.utils.data import IterableDataset, get_worker_info


class ShardedStream(IterableDataset):
    def __init__(self, shards, *, rank=0, world_size=1, shuffle=False, seed=0):
        """shards: a list of lists of samples (each stands for a file)."""
        raise NotImplementedError("write __init__")

    def set_epoch(self, epoch):
        """Choose the epoch whose order the next iterations yield."""
        raise NotImplementedError("write set_epoch")

    def __iter__(self):
        """Yield this consumer's samples: consumer c = rank * num_workers + worker_id of
        K = world_size * num_workers reads shards c, c + K, c + 2K ... of the epoch's shard
        order, one whole shard after another."""
        # get_worker_info() tells the worker here (it is None in the main process, where
        # __init__ runs). Shuffle with a private generator seeded from (seed, epoch) only.
        raise NotImplementedError("write __iter__")
