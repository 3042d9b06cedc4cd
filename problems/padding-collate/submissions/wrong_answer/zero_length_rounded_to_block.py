"""Bug: T is clamped to at least 1 before rounding (to avoid zero-width tensors), so a batch of only empty sequences with pad_to_multiple_of gets T = pad_to_multiple_of instead of 0."""
import math

import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if not batch:
        raise ValueError("empty batch")
    if padding_side not in ("right", "left"):
        raise ValueError("padding_side")
    lens = [len(s["input_ids"]) for s in batch]
    T = max(lens)
    if pad_to_multiple_of:
        T = math.ceil(max(T, 1) / pad_to_multiple_of) * pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), T), dtype=torch.bool)
    for i, s in enumerate(batch):
        n = lens[i]
        lo = 0 if padding_side == "right" else T - n
        ids[i, lo:lo + n] = s["input_ids"]
        mask[i, lo:lo + n] = True
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.tensor([s["label"] for s in batch], dtype=torch.long)}
