# Bug: mixes torch.initial_seed() (the GLOBAL seed) into its generator "to respect the
# user's seed". The global state is never changed, but the order depends on it:
# global_rng_not_used.
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.lengths = torch.as_tensor(lengths, dtype=torch.int64)
        self.batch_size, self.shuffle, self.drop_last, self.seed = batch_size, shuffle, drop_last, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if not self.shuffle:
            order = torch.argsort(self.lengths, stable=True)
            starts = list(range(0, n, bs))
        else:
            g = torch.Generator().manual_seed(torch.initial_seed() + 1000 * self.seed + self.epoch)
            order = torch.randperm(n, generator=g)
            noisy = self.lengths[order].double() * (0.9 + 0.2 * torch.rand(n, generator=g, dtype=torch.float64))
            order = order[torch.argsort(noisy)]
            starts = (torch.randperm(-(-n // bs), generator=g) * bs).tolist()
        flat = order.tolist()
        for s in starts:
            if self.drop_last and s + bs > n:
                continue
            yield flat[s:s + bs]


def padding_ratio(batches, lengths):
    pad = tok = 0
    for b in batches:
        if len(b):
            m = max(int(lengths[i]) for i in b)
            tok += m * len(b)
            pad += sum(m - int(lengths[i]) for i in b)
    return pad / tok if tok else 0.0
