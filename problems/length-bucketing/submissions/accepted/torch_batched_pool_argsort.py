"""Correct: torch.Generator seeded with seed * 1_000_003 + epoch; random drop, pools of 64 batches sorted with a batched stable argsort, batches shuffled with randperm."""
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    POOL_BATCHES = 64

    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.lengths = torch.as_tensor(lengths, dtype=torch.long).reshape(-1)
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = int(seed)
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __len__(self):
        n = self.lengths.numel()
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size

    def _cut(self, order):
        flat = order.tolist()
        bs = self.batch_size
        return [flat[i:i + bs] for i in range(0, len(flat), bs)]

    def __iter__(self):
        n = self.lengths.numel()
        bs = self.batch_size
        if not self.shuffle:
            order = torch.argsort(self.lengths, stable=True)
            if self.drop_last:
                order = order[: n - n % bs]
            yield from self._cut(order)
            return
        g = torch.Generator()
        g.manual_seed(self.seed * 1_000_003 + self.epoch)
        perm = torch.randperm(n, generator=g)
        if self.drop_last:
            perm = perm[: n - n % bs]  # random samples sit out
        m = perm.numel()
        pool = self.POOL_BATCHES * bs
        full = (m // pool) * pool
        pieces = []
        if full:
            p = perm[:full].view(-1, pool)
            key = self.lengths[p]
            idx = torch.argsort(key, dim=1, stable=True)
            pieces.append(torch.gather(p, 1, idx).reshape(-1))
        if full < m:
            rest = perm[full:]
            pieces.append(rest[torch.argsort(self.lengths[rest], stable=True)])
        order = torch.cat(pieces) if pieces else perm
        batches = self._cut(order)
        for j in torch.randperm(len(batches), generator=g).tolist():
            yield batches[j]


def padding_ratio(batches, lengths):
    lengths = torch.as_tensor(lengths, dtype=torch.long).reshape(-1)
    total = 0
    real = 0
    for b in batches:
        if len(b) == 0:
            continue
        l = lengths[torch.as_tensor(b, dtype=torch.long)]
        total += int(l.max()) * len(b)
        real += int(l.sum())
    if total == 0:
        return 0.0
    return float((total - real) / total)
