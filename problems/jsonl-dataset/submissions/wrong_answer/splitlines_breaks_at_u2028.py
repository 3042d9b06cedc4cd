"""Wrong: reads the file in chunks of text and cuts them into lines with
str.splitlines(keepends=True), which also breaks at U+2028, U+2029 and U+0085: a record
holding one of them raw is cut in two."""

import json
import os

import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path, self.transform = path, transform
        self.offsets, pos, pending = [], 0, ""
        with open(path, encoding="utf-8", newline="") as f:
            while chunk := f.read(1 << 16):
                pieces = (pending + chunk).splitlines(keepends=True)
                pending = pieces.pop() if pieces and not pieces[-1].endswith("\n") else ""
                for piece in pieces:
                    if piece.strip(" \t\r\n"):
                        self.offsets.append(pos)
                    pos += len(piece.encode("utf-8"))
        if pending.strip(" \t\r\n"):
            self.offsets.append(pos)
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
