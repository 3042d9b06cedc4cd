# F.pad on every sequence, then stack; the mask is padded the same way.
import torch
import torch.nn.functional as F


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in {"left", "right"}:
        raise ValueError(padding_side)
    if not len(batch):
        raise ValueError("no samples")
    longest = max(len(x["input_ids"]) for x in batch)
    if pad_to_multiple_of:
        while longest % pad_to_multiple_of:
            longest += 1
    rows, masks = [], []
    for x in batch:
        n = len(x["input_ids"])
        spec = (0, longest - n) if padding_side == "right" else (longest - n, 0)
        rows.append(F.pad(x["input_ids"].long(), spec, value=pad_id))
        masks.append(F.pad(torch.ones(n, dtype=torch.bool), spec, value=False))
    return {
        "input_ids": torch.stack(rows),
        "attention_mask": torch.stack(masks),
        "labels": torch.as_tensor([x["label"] for x in batch], dtype=torch.long),
    }
