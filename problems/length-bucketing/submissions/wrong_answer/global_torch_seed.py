# Bug: "reproducible" by seeding the GLOBAL torch RNG (torch.manual_seed) and then calling
# torch.randperm without a generator. The order is right, but every epoch resets the
# user's global RNG (dropout masks, augmentation...): global_rng_untouched.
import torch
from torch.utils.data import Sampler


class BucketBatchSampler(Sampler):
    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.lengths = torch.as_tensor(lengths, dtype=torch.long)
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
            order = torch.argsort(self.lengths, stable=True).tolist()
            starts = list(range(0, n, bs))
        else:
            torch.manual_seed(self.seed * 10007 + self.epoch)
            perm = torch.randperm(n)
            pool = 64 * bs
            order = []
            for s in range(0, n, pool):
                chunk = perm[s:s + pool]
                order += chunk[torch.argsort(self.lengths[chunk], stable=True)].tolist()
            starts = (torch.randperm(-(-n // bs)) * bs).tolist()
        for s in starts:
            batch = order[s:s + bs]
            if len(batch) == bs or not self.drop_last:
                yield batch


def padding_ratio(batches, lengths):
    real = padded = 0
    for b in batches:
        if b:
            ls = [int(lengths[i]) for i in b]
            real += sum(ls)
            padded += max(ls) * len(ls)
    return (padded - real) / padded if padded else 0.0
