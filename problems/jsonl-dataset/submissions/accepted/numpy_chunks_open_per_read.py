"""Accepted: the index built from 1 MiB chunks with numpy (newline positions, then the
lines that hold something else than spaces, tabs and \\r), kept as an int64 array; every
read opens the file, seeks and reads one line (nothing to share, nothing to pickle)."""

import json

import numpy as np
import torch

CHUNK = 1 << 20
BLANK = np.zeros(256, dtype=bool)
BLANK[[ord(" "), ord("\t"), ord("\r"), ord("\n")]] = True


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        self.path, self.transform = path, transform
        starts, base, line_start, line_has_text = [], 0, 0, False
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                data = np.frombuffer(chunk, dtype=np.uint8)
                text = ~BLANK[data]
                newlines = np.flatnonzero(data == 10)
                # Does anything but blanks come before each newline (since the line began)?
                counts = np.concatenate(([0], np.cumsum(text)))
                cuts = np.concatenate(([0], newlines + 1))
                seen = counts[cuts[1:]] - counts[cuts[:-1]] > 0
                for k, newline in enumerate(newlines):
                    if line_has_text or seen[k]:
                        starts.append(line_start)
                    line_start, line_has_text = base + int(newline) + 1, False
                line_has_text = line_has_text or counts[-1] - counts[cuts[-1]] > 0
                base += len(chunk)
        if line_has_text:
            starts.append(line_start)
        self.starts = np.array(starts, dtype=np.int64)

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, i):
        n = len(self.starts)
        if not -n <= i < n:
            raise IndexError(f"{i} not in [-{n}, {n})")
        with open(self.path, "rb") as f:
            f.seek(int(self.starts[i]))
            record = json.loads(f.readline())
        return self.transform(record) if self.transform else record
