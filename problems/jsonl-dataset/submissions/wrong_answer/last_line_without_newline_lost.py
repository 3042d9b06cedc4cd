"""Wrong: scans 64 KiB chunks for b"\\n" and records a line when its newline is found,
but forgets the last line when the file does not end with a newline."""

import json
import os

import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path, self.transform = path, transform
        self.offsets = []
        line_start, base, has_text = 0, 0, False
        with open(path, "rb") as f:
            while chunk := f.read(1 << 16):
                pos = 0
                while (newline := chunk.find(b"\n", pos)) >= 0:
                    if has_text or chunk[pos:newline].strip(b" \t\r"):
                        self.offsets.append(line_start)
                    line_start, has_text, pos = base + newline + 1, False, newline + 1
                has_text = has_text or bool(chunk[pos:].strip(b" \t\r"))
                base += len(chunk)
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
