"""Bug: labels built with torch.Tensor(list), which gives float32 instead of int64."""
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if not batch or padding_side not in ("right", "left"):
        raise ValueError("bad arguments")
    lens = [len(s["input_ids"]) for s in batch]
    T = max(lens)
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), T), dtype=torch.bool)
    for i, (s, n) in enumerate(zip(batch, lens)):
        start = 0 if padding_side == "right" else T - n
        ids[i, start:start + n] = s["input_ids"]
        mask[i, start:start + n] = True
    labels = torch.Tensor([s["label"] for s in batch])
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
