"""Correct: preallocate torch.full / torch.zeros(bool) of [B, T] and copy each row with a slice assignment."""
import math

import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if len(batch) == 0:
        raise ValueError("batch is empty")
    if padding_side != "right" and padding_side != "left":
        raise ValueError("bad padding_side")
    lens = [x["input_ids"].shape[0] for x in batch]
    T = max(lens)
    if pad_to_multiple_of is not None and T % pad_to_multiple_of != 0:
        T = math.ceil(T / pad_to_multiple_of) * pad_to_multiple_of
    B = len(batch)
    input_ids = torch.full((B, T), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((B, T), dtype=torch.bool)
    for i, x in enumerate(batch):
        n = lens[i]
        if n == 0:
            continue
        if padding_side == "right":
            input_ids[i, :n] = x["input_ids"]
            attention_mask[i, :n] = True
        else:
            input_ids[i, T - n:] = x["input_ids"]
            attention_mask[i, T - n:] = True
    labels = torch.LongTensor([x["label"] for x in batch])
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
