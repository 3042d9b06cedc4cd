# torch.nn.utils.rnn.pad_sequence, flipping the sequences for left padding.
import math

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side != "right" and padding_side != "left":
        raise ValueError(f"unknown padding_side {padding_side}")
    if len(batch) == 0:
        raise ValueError("batch is empty")
    seqs = [s["input_ids"].to(torch.long) for s in batch]
    lengths = torch.tensor([len(s) for s in seqs])
    if padding_side == "left":
        seqs = [s.flip(0) for s in seqs]
    ids = pad_sequence(seqs, batch_first=True, padding_value=pad_id)
    mask = torch.arange(ids.shape[1])[None, :] < lengths[:, None]
    if pad_to_multiple_of:
        target = math.ceil(ids.shape[1] / pad_to_multiple_of) * pad_to_multiple_of
        extra = target - ids.shape[1]
        ids = F.pad(ids, (0, extra), value=pad_id)
        mask = F.pad(mask, (0, extra), value=False)
    if padding_side == "left":
        ids, mask = ids.flip(1), mask.flip(1)
    labels = torch.tensor([s["label"] for s in batch]).long()
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
