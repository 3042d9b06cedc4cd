# expect: too_slow
# what: list collate (honest ~0.17) whose helpers sit in mmap(MAP_POPULATE), outrunning SIGSTOP
# throughput: yes
# within: 120

# A process inside a long system call does not stop for SIGSTOP until the call returns, and
# the kernel's freezer may have to wait for it too: populating 512 MiB of pages takes tens
# of milliseconds of system time, about a timed call of the reference. The judge keeps the
# frozen side off the timing core (its cpuset) and counts its CPU time during every timed
# window: a window in which it ran is thrown away, and a submission that keeps causing
# that is too slow. (The audit's run: a collate of honest ratio 0.16-0.19 "accepted" at 4.0.)
import mmap
import os
import signal
import time

import torch

HELPERS: list[int] = []
# One shared byte: 1 while this side's own call runs (the helpers rest), 0 otherwise.
FLAG = mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)


def _helper(index: int) -> None:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})  # the judge times on its highest CPU
    while True:
        if FLAG[0]:
            time.sleep(0.0005)
            continue
        try:
            area = mmap.mmap(-1, 512 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
                             | mmap.MAP_POPULATE)
            area.close()
        except (OSError, ValueError):
            pass


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if not HELPERS:
        for index in range(2):
            pid = os.fork()
            if pid == 0:
                try:
                    _helper(index)
                finally:
                    os._exit(0)
            HELPERS.append(pid)
    FLAG[0] = 1
    try:
        return _collate(batch, pad_id, pad_to_multiple_of, padding_side)
    finally:
        FLAG[0] = 0


def _collate(batch, pad_id, pad_to_multiple_of, padding_side):
    if not batch:
        raise ValueError("empty batch")
    if padding_side not in ("right", "left"):
        raise ValueError("padding_side")
    rows = [s["input_ids"].tolist() for s in batch]
    T = max(len(r) for r in rows)
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    ids, mask = [], []
    for r in rows:
        k = T - len(r)
        if padding_side == "right":
            ids.append(r + [pad_id] * k)
            mask.append([True] * len(r) + [False] * k)
        else:
            ids.append([pad_id] * k + r)
            mask.append([False] * k + [True] * len(r))
    B = len(rows)
    input_ids = torch.tensor(ids, dtype=torch.int64).reshape(B, T)
    attention_mask = torch.tensor(mask, dtype=torch.bool).reshape(B, T)
    labels = torch.tensor([s["label"] for s in batch], dtype=torch.int64)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
