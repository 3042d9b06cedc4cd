"""Too slow: no index at all (so no memory): every read walks the file from the start to
the i-th record. Right, and lazy, but each read costs O(file)."""

import itertools
import json

import torch


def records(f):
    return (line for line in f if line.strip(b" \t\r\n"))


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path, self.transform = path, transform
        with open(path, "rb") as f:
            self.n = sum(1 for _ in records(f))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        i = range(self.n)[i]
        with open(self.path, "rb") as f:
            line = next(itertools.islice(records(f), i, None))
        record = json.loads(line)
        return self.transform(record) if self.transform else record
