"""Wrong: readlines() in __init__ keeps the whole file's text in memory (the bug the
problem is about); everything else is right."""

import json

import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        with open(path, encoding="utf-8") as f:
            self.lines = [line for line in f.readlines() if line.strip(" \t\r\n")]
        self.transform = transform

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        record = json.loads(self.lines[i])
        return self.transform(record) if self.transform else record
