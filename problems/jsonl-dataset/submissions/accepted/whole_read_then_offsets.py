"""Accepted: __init__ reads the whole file once, finds the record lines with a regular
expression, and keeps only their offsets (the bytes are freed when __init__ returns: the
memory limit has room for the file once, not for its records). Reads go through a handle
opened on first use in each process."""

import json
import os
import re

import torch

RECORD = re.compile(rb"[^\n]*[^ \t\r\n][^\n]*")  # a line with something besides blanks


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path, self.transform = path, transform
        with open(path, "rb") as f:
            data = f.read()
        self.offsets = [m.start() for m in RECORD.finditer(data)]
        del data
        self.handle, self.pid = None, None

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        i = range(len(self.offsets))[i]  # negative indices and IndexError, as a list
        if self.pid != os.getpid():
            self.handle, self.pid = open(self.path, "rb"), os.getpid()  # noqa: SIM115
        self.handle.seek(self.offsets[i])
        value = json.loads(self.handle.readline())
        return self.transform(value) if self.transform else value

    def __getstate__(self):
        return dict(self.__dict__, handle=None, pid=None)
