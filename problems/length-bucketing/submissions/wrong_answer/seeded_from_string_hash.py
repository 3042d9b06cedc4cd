"""Bug: the private generator is seeded from Python's hash() of a string. Within one
process the same (seed, epoch) gives the same batches, but str hashes are salted per
process (PYTHONHASHSEED): a resumed run, or another data-parallel rank, gets other batches
for the same (seed, epoch)."""
import torch


class BucketBatchSampler(torch.utils.data.Sampler):
    POOL = 64  # batches per pool

    def __init__(self, lengths, batch_size, *, shuffle=True, drop_last=False, seed=0):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.lengths = torch.as_tensor(list(lengths) if not isinstance(lengths, torch.Tensor)
                                       else lengths, dtype=torch.int64).reshape(-1)
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

    def _batches(self):
        n, bs = len(self.lengths), self.batch_size
        if not self.shuffle:
            order = torch.argsort(self.lengths, stable=True)
            return [order[i:i + bs] for i in range(0, n, bs)], None
        g = torch.Generator().manual_seed(hash(f"bucket-{self.seed}-{self.epoch}") & (2**63 - 1))
        perm = torch.randperm(n, generator=g)
        pool = self.POOL * bs
        batches = []
        for start in range(0, n, pool):
            chunk = perm[start:start + pool]
            chunk = chunk[torch.argsort(self.lengths[chunk], stable=True)]
            batches += [chunk[i:i + bs] for i in range(0, len(chunk), bs)]
        return batches, g

    def __iter__(self):
        batches, g = self._batches()
        if self.drop_last:
            batches = [b for b in batches if len(b) == self.batch_size]
        if g is not None:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
        for b in batches:
            yield b.tolist()


def padding_ratio(batches, lengths):
    lengths = [int(x) for x in lengths]
    padded = real = 0
    for b in batches:
        if b:
            ls = [lengths[i] for i in b]
            padded += max(ls) * len(ls)
            real += sum(ls)
    return (padded - real) / padded if padded else 0.0
