"""Too slow: the index holds text-mode positions from f.tell() after every readline(),
which the text layer computes by replaying its decoder: right (seek() takes them back),
but several times slower to build."""

import json
import os

import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path, self.transform = path, transform
        self.cookies = []
        with open(path, encoding="utf-8", newline="\n") as f:
            while True:
                cookie = f.tell()
                line = f.readline()
                if not line:
                    break
                if line.strip(" \t\r\n"):
                    self.cookies.append(cookie)
        self.f, self.pid = None, None

    def __len__(self):
        return len(self.cookies)

    def __getitem__(self, i):
        i = range(len(self.cookies))[i]
        if self.pid != os.getpid():
            self.f, self.pid = open(self.path, encoding="utf-8", newline="\n"), os.getpid()
        self.f.seek(self.cookies[i])
        record = json.loads(self.f.readline())
        return self.transform(record) if self.transform else record

    def __getstate__(self):
        return {**self.__dict__, "f": None, "pid": None}
