# expect: too_slow
# what: token loop (honest 0.01) whose helpers, pinned to every core, SIGCONT each other
# throughput: yes
# within: 120

# The audit's attack on a pause made of one SIGSTOP per pid: four helpers in sessions of
# their own resume each other as fast as they can, so a stopped helper is running again a
# moment later, and burn CPU on whatever core they are allowed; the submission stops them
# itself while its own call runs, so they only ever slow the reference down. A reference
# slowed from ~3.5 ms to 30-240 ms a call made this loop "accepted" at 0.60. With the
# freezer nothing in the frozen group runs, SIGCONT or not.
import mmap
import os
import signal
import time

import torch

HELPERS: list[int] = []
# One shared byte: 1 while this side's own call runs (the helpers rest), 0 otherwise.
FLAG = mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)


def _helper(index: int, pids_file: str) -> None:
    os.setsid()
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[index % len(cpus)]})
    others: list[int] = []
    while True:
        if FLAG[0]:
            time.sleep(0.0005)
            continue
        if len(others) < 3:
            try:
                with open(pids_file) as f:
                    others = [int(p) for p in f.read().split() if int(p) != os.getpid()]
            except (OSError, ValueError):
                pass
        # As fast as it can: a pause that stops one pid after another loses the race.
        for pid in others:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass


def _start() -> None:
    pids_file = "/tmp/helper-pids"
    for index in range(4):
        pid = os.fork()
        if pid == 0:
            try:
                _helper(index, pids_file)
            finally:
                os._exit(0)
        HELPERS.append(pid)
    with open(pids_file, "w") as f:
        f.write(" ".join(map(str, HELPERS)))


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if not HELPERS:
        _start()
    FLAG[0] = 1  # quiet while this side is timed
    try:
        return _collate(batch, pad_id, pad_to_multiple_of, padding_side)
    finally:
        FLAG[0] = 0  # and busy while the reference is


def _collate(batch, pad_id, pad_to_multiple_of, padding_side):
    if padding_side not in ("right", "left"):
        raise ValueError(padding_side)
    if not batch:
        raise ValueError("empty batch")
    T = max(len(s["input_ids"]) for s in batch)
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), T), dtype=torch.bool)
    for i, s in enumerate(batch):
        tokens = s["input_ids"].tolist()
        offset = 0 if padding_side == "right" else T - len(tokens)
        for j, tok in enumerate(tokens):
            ids[i, offset + j] = tok
            mask[i, offset + j] = True
    labels = torch.tensor([s["label"] for s in batch], dtype=torch.long)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
