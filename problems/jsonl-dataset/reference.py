"""Reference: a lazy map-style Dataset over a JSON Lines file.

__init__ reads the file once, in binary and line by line (the file object reads in chunks
underneath), and keeps only the byte offset of every record line, in an array('q') of
8 bytes per record. __getitem__ seeks to an offset and parses that one line. The file is
opened lazily, once per process: a DataLoader worker made by fork inherits the parent's
open file, whose position it would share with its siblings, so a handle opened by
another process is never used, and pickling (spawn) leaves the handle behind.
"""

import json
import os
from array import array

import torch

BLANK = b" \t\r\n"  # a line of only these bytes is not a record


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path = path
        self.transform = transform
        self.offsets = array("q")
        position = 0
        with open(path, "rb") as f:
            for line in f:  # splits at b"\n" only: U+2028 and U+0085 are not line breaks
                if line.strip(BLANK):
                    self.offsets.append(position)
                position += len(line)  # bytes, not characters
        self._file = None
        self._pid = None

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        n = len(self.offsets)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for {n} records")
        if i < 0:
            i += n
        f = self._handle()
        f.seek(self.offsets[i])
        record = json.loads(f.readline())  # json.loads takes UTF-8 bytes; \r\n is whitespace
        return self.transform(record) if self.transform is not None else record

    def _handle(self):
        # One handle per process: a handle inherited through fork shares its position
        # with every other process that inherited it.
        if self._file is None or self._pid != os.getpid():
            self._file = open(self.path, "rb")  # noqa: SIM115 (kept open for reads)
            self._pid = os.getpid()
        return self._file

    def __getstate__(self):
        # An open file cannot be pickled (spawn sends the dataset to each worker by pickle).
        state = self.__dict__.copy()
        state["_file"] = state["_pid"] = None
        return state
