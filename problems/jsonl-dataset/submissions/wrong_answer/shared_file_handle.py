"""Wrong: one file object opened in __init__ and used by every process: after fork the
workers share its position (torn lines), and spawn cannot pickle it."""

import json
import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path = path
        self.transform = transform
        self.offsets = []
        pos = 0
        with open(path, "rb") as f:
            for line in f:
                if line.strip(b" \t\r\n"):
                    self.offsets.append(pos)
                pos += len(line)
        self.f = open(path, "rb")

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        if i < 0:
            i += len(self.offsets)
        if i < 0 or i >= len(self.offsets):
            raise IndexError(i)
        self.f.seek(self.offsets[i])
        record = json.loads(self.f.readline())
        if self.transform is not None:
            record = self.transform(record)
        return record
