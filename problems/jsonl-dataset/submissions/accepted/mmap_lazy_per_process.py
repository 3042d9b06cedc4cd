"""Accepted: the file mapped into memory (mmap), mapped again in every process that reads,
offsets found with mm.find(b"\\n") and kept in a plain list; the mapping is dropped when
pickled. mmap pages belong to the file, not to the process's heap."""

import json
import mmap
import os

import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path = path
        self.transform = transform
        self.starts, self.ends = [], []
        self._map, self._owner = None, None
        mm = self._mapped()
        pos, size = 0, len(mm) if mm is not None else 0
        while pos < size:
            end = mm.find(b"\n", pos)
            end = size if end < 0 else end
            line = mm[pos:end]
            if line.strip(b" \t\r"):
                self.starts.append(pos)
                self.ends.append(end)
            pos = end + 1

    def _mapped(self):
        if self._owner != os.getpid():
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                # An empty file cannot be mapped.
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else None
            self._owner = os.getpid()
        return self._map

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, index):
        n = len(self.starts)
        if index < -n or index >= n:
            raise IndexError(index)
        index %= n
        mm = self._mapped()
        record = json.loads(mm[self.starts[index]:self.ends[index]])
        return record if self.transform is None else self.transform(record)

    def __getstate__(self):
        return {**self.__dict__, "_map": None, "_owner": None}
