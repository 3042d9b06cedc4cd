"""Bug: any padding_side other than "left" is silently treated as "right" instead of raising ValueError."""
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if not batch:
        raise ValueError("empty batch")
    left = padding_side == "left"
    lens = torch.tensor([len(s["input_ids"]) for s in batch])
    T = int(lens.max())
    if pad_to_multiple_of:
        T = -(-T // pad_to_multiple_of) * pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.int64)
    pos = torch.arange(T)[None, :]
    mask = pos >= (T - lens)[:, None] if left else pos < lens[:, None]
    ids[mask] = torch.cat([s["input_ids"] for s in batch])
    labels = torch.tensor([s["label"] for s in batch], dtype=torch.int64)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
