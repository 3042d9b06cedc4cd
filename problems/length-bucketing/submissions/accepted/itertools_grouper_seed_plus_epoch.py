"""Correct: torch.Generator seeded with seed + epoch (DistributedSampler style); np.argsort of length * jitter, itertools grouper zip(*[it] * bs) to cut, full batches shuffled, short batch always last."""
from itertools import islice

import numpy as np
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if isinstance(lengths, torch.Tensor):
            self.lengths = lengths.detach().cpu().to(torch.int64).numpy().reshape(-1)
        else:
            self.lengths = np.fromiter(lengths, dtype=np.int64, count=len(lengths))
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        n = len(self.lengths)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size

    def _group(self, flat):
        bs = self.batch_size
        full = len(flat) // bs
        it = iter(flat)
        batches = list(map(list, zip(*[it] * bs)))
        rest = list(islice(iter(flat), full * bs, None))
        return batches, rest

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if not self.shuffle:
            order = np.argsort(self.lengths, kind="stable")
            batches, rest = self._group(order.tolist())
            if rest and not self.drop_last:
                batches.append(rest)
            return iter(batches)
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        jitter = torch.empty(n, dtype=torch.float64).uniform_(0.9, 1.1, generator=g).numpy()
        order = np.argsort(self.lengths * jitter)
        if self.drop_last and n % bs:
            keep = np.zeros(n, dtype=bool)
            keep[torch.randperm(n, generator=g)[: n - n % bs].numpy()] = True
            order = order[keep[order]]
        batches, rest = self._group(order.tolist())
        perm = torch.randperm(len(batches), generator=g).tolist()
        out = [batches[j] for j in perm]
        if rest:
            out.append(rest)
        return iter(out)


def padding_ratio(batches, lengths):
    lens = torch.as_tensor(lengths).to(torch.int64).flatten()
    flat = [(len(b), b) for b in batches if len(b)]
    if not flat:
        return 0.0
    idx = torch.tensor([i for _, b in flat for i in b], dtype=torch.int64)
    sizes = torch.tensor([k for k, _ in flat])
    seg = torch.repeat_interleave(torch.arange(len(flat)), sizes)
    l = lens[idx]
    mx = torch.zeros(len(flat), dtype=torch.int64).scatter_reduce(0, seg, l, reduce="amax", include_self=True)
    total = int((mx * sizes).sum())
    if total == 0:
        return 0.0
    return float(total - int(l.sum())) / total
