# expect: too_slow|time_limit_exceeded
# what: passes every case, then holds the GIL forever from the first timed call on
# throughput: yes

# The runner then stops reading what the judge sends; the send had no deadline and
# the judging ended in internal_error after 3 minutes.

import ctypes
import threading
import time

import torch

_armed = []


def _hold_the_gil():
    time.sleep(0.05)
    ctypes.PyDLL(None).sleep(100_000)  # libc's sleep, called without releasing the GIL


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    if not batch:
        raise ValueError("empty batch")
    lengths = [len(s["input_ids"]) for s in batch]
    width = max(lengths)
    if pad_to_multiple_of and width % pad_to_multiple_of:
        width += pad_to_multiple_of - width % pad_to_multiple_of
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.bool)
    for row, (sample, n) in enumerate(zip(batch, lengths, strict=True)):
        cols = slice(0, n) if padding_side == "right" else slice(width - n, width)
        ids[row, cols] = sample["input_ids"]
        mask[row, cols] = True
    labels = torch.tensor([int(s["label"]) for s in batch], dtype=torch.long)
    if len(batch) >= 256 and not _armed:  # the speed check's batches
        _armed.append(1)
        threading.Thread(target=_hold_the_gil, daemon=True).start()
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
