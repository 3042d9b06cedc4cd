# Accepted: pure torch, in the style of DistributedSampler (generator seeded with
# seed + epoch). Pools of 100 batches are sorted one by one; the batches are shuffled.
import torch
from torch.utils.data import Sampler


class BucketBatchSampler(Sampler):
    POOL = 100

    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        super().__init__()
        if batch_size <= 0:
            raise ValueError(f"batch_size={batch_size}")
        self.lengths = torch.tensor(list(lengths), dtype=torch.long)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        n = self.lengths.numel()
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        if not self.shuffle:
            _, order = torch.sort(self.lengths, stable=True)
            # torch.split of an empty tensor gives one empty piece: N = 0 means no batches
            batches = list(torch.split(order, self.batch_size)) if len(order) else []
        else:
            g = torch.Generator()
            g.manual_seed(self.seed + self.epoch)
            perm = torch.randperm(self.lengths.numel(), generator=g)
            step = self.POOL * self.batch_size
            batches = []
            for start in range(0, len(perm), step):
                pool = perm[start:start + step]
                pool = pool[torch.argsort(self.lengths[pool], descending=True)]
                batches.extend(torch.split(pool, self.batch_size))
            # the short batch (if any) is the last one of the last pool
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches = batches[:-1]
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
        for b in batches:
            yield b.tolist()


def padding_ratio(batches, lengths):
    pad = tokens = 0
    for b in batches:
        if not b:
            continue
        ls = [int(lengths[i]) for i in b]
        longest = max(ls)
        tokens += longest * len(ls)
        pad += sum(longest - x for x in ls)
    return pad / tokens if tokens else 0.0
