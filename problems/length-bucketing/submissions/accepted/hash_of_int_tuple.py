# Accepted: the generator is seeded with hash((seed, epoch)). A tuple of ints hashes the
# same in every process (only str and bytes hashes are salted by PYTHONHASHSEED), so a
# resumed run or another rank gets the same batches. Pools of 64 batches; __iter__ builds
# every batch as a list of its own first.
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    POOL = 64

    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if not isinstance(lengths, torch.Tensor):
            lengths = torch.tensor(list(lengths), dtype=torch.int64)
        self.lengths = lengths.to(torch.int64).reshape(-1)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n, bs = len(self.lengths), self.batch_size
        if self.shuffle:
            g = torch.Generator().manual_seed(hash((self.seed, self.epoch)) % 2**63)
            perm = torch.randperm(n, generator=g)
            pool = self.POOL * bs
            order = torch.cat([chunk[torch.argsort(self.lengths[chunk], stable=True)]
                               for chunk in perm.split(pool)]) if n else perm
        else:
            order = torch.argsort(self.lengths, stable=True)
        flat = order.tolist()
        batches = [flat[i:i + bs] for i in range(0, n, bs)]  # the short one (if any) is last
        if self.drop_last and batches and len(batches[-1]) < bs:
            batches.pop()
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
        yield from batches


def padding_ratio(batches, lengths):
    lengths = [int(x) for x in lengths]
    padded = real = 0
    for b in batches:
        if b:
            ls = [lengths[i] for i in b]
            padded += max(ls) * len(ls)
            real += sum(ls)
    return (padded - real) / padded if padded else 0.0
