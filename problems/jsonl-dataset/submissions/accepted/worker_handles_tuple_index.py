"""Accepted: offsets kept as (start, length) pairs in two array('q'), an unbuffered handle
per DataLoader worker keyed by the worker's id (and the main process's own), dropped when
pickled; each read is a pread of exactly the record's bytes (no shared position at all)."""

import json
import os
from array import array

import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path = path
        self.transform = transform
        self.start, self.size = array("q"), array("q")
        offset = 0
        with open(path, "rb", buffering=1 << 16) as f:
            for line in f:
                if line.strip(b" \t\r\n"):
                    self.start.append(offset)
                    self.size.append(len(line))
                offset += len(line)
        self._handles = {}

    def _fd(self):
        info = torch.utils.data.get_worker_info()
        key = (os.getpid(), info.id if info is not None else None)
        if key not in self._handles:
            # A file object (not a bare os.open) is closed with the dataset.
            self._handles = {key: open(self.path, "rb", buffering=0)}  # noqa: SIM115
        return self._handles[key].fileno()

    def __len__(self):
        return len(self.start)

    def __getitem__(self, i):
        if i < 0:
            i += len(self)
        if i < 0 or i >= len(self):
            raise IndexError("JsonlDataset index out of range")
        line = os.pread(self._fd(), self.size[i], self.start[i])
        record = json.loads(line)
        if self.transform is not None:
            record = self.transform(record)
        return record

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_handles"] = {}
        return state
