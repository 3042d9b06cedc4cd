"""Bug: the padded ids are allocated with dtype=torch.int (int32), not torch.long (int64)."""
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if not batch:
        raise ValueError("empty batch")
    if padding_side not in ("right", "left"):
        raise ValueError("padding_side")
    B = len(batch)
    lens = [len(s["input_ids"]) for s in batch]
    T = max(lens)
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    ids = torch.full((B, T), pad_id, dtype=torch.int)
    mask = torch.zeros(B, T, dtype=torch.bool)
    for i, s in enumerate(batch):
        n = lens[i]
        sl = slice(0, n) if padding_side == "right" else slice(T - n, T)
        ids[i, sl] = s["input_ids"]
        mask[i, sl] = True
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.tensor([s["label"] for s in batch])}
