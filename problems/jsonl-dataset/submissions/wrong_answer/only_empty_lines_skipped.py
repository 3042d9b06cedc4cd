"""Wrong: skips empty lines but not lines of spaces, tabs or \r ("\r\n" alone included)."""

import json
import os

import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path = path
        self.transform = transform
        self.offsets = []
        pos = 0
        with open(path, "rb") as f:
            for line in f:
                if line != b"\n":
                    self.offsets.append(pos)
                pos += len(line)
        self.f = None
        self.pid = None

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        if i < 0:
            i += len(self.offsets)
        if i < 0 or i >= len(self.offsets):
            raise IndexError(i)
        if self.pid != os.getpid():
            self.f = open(self.path, "rb")
            self.pid = os.getpid()
        self.f.seek(self.offsets[i])
        record = json.loads(self.f.readline())
        if self.transform is not None:
            record = self.transform(record)
        return record

    def __getstate__(self):
        return {**self.__dict__, "f": None, "pid": None}
