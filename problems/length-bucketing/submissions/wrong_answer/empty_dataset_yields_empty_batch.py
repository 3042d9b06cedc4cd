# Bug: torch.split of an empty tensor returns one empty piece, so an empty dataset yields
# one empty batch while len() says 0 (the DataLoader would call collate_fn on []):
# tiny_datasets.
import torch
from torch.utils.data import Sampler


class BucketBatchSampler(Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size <= 0:
            raise ValueError(f"batch_size={batch_size}")
        self.lengths = torch.tensor(list(lengths), dtype=torch.long)
        self.batch_size, self.shuffle, self.drop_last, self.seed = batch_size, shuffle, drop_last, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n = self.lengths.numel()
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        if not self.shuffle:
            order = torch.sort(self.lengths, stable=True).indices
            batches = list(torch.split(order, self.batch_size))
        else:
            g = torch.Generator().manual_seed(self.seed + self.epoch)
            perm = torch.randperm(self.lengths.numel(), generator=g)
            step = 100 * self.batch_size
            batches = []
            for start in range(0, len(perm), step):
                pool = perm[start:start + step]
                pool = pool[torch.argsort(self.lengths[pool])]
                batches.extend(torch.split(pool, self.batch_size))
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches = batches[:-1]
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
        for b in batches:
            yield b.tolist()


def padding_ratio(batches, lengths):
    pad = tokens = 0
    for b in batches:
        if b:
            ls = [int(lengths[i]) for i in b]
            tokens += max(ls) * len(ls)
            pad += sum(max(ls) - x for x in ls)
    return pad / tokens if tokens else 0.0
