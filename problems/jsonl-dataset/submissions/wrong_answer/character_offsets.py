"""Wrong: the index is built in text mode, adding up len(line) in characters, and the
reads seek in binary by those numbers: right for ASCII, wrong after the first Chinese
character or emoji (3 or 4 bytes each)."""

import json
import os

import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path, self.transform = path, transform
        self.offsets, pos = [], 0
        with open(path, encoding="utf-8", newline="") as f:
            for line in f:
                if line.strip(" \t\r\n"):
                    self.offsets.append(pos)
                pos += len(line)
        self.f, self.pid = None, None

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        i = range(len(self.offsets))[i]
        if self.pid != os.getpid():
            self.f, self.pid = open(self.path, "rb"), os.getpid()
        self.f.seek(self.offsets[i])
        record = json.loads(self.f.readline())
        return self.transform(record) if self.transform else record

    def __getstate__(self):
        return {**self.__dict__, "f": None, "pid": None}
