"""Bug: left padding writes the mask with mask[i, -n:] = True, and -0: selects the whole row for an empty sequence."""
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if not batch:
        raise ValueError("empty batch")
    if padding_side not in ("right", "left"):
        raise ValueError("padding_side")
    lens = [s["input_ids"].numel() for s in batch]
    T = max(lens)
    if pad_to_multiple_of is not None and T % pad_to_multiple_of != 0:
        T = (T // pad_to_multiple_of + 1) * pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.int64)
    mask = torch.zeros(len(batch), T, dtype=torch.bool)
    for i, s in enumerate(batch):
        n = lens[i]
        if padding_side == "right":
            ids[i, :n] = s["input_ids"]
            mask[i, :n] = True
        else:
            if n > 0:
                ids[i, -n:] = s["input_ids"]
            mask[i, -n:] = True
    labels = torch.tensor([s["label"] for s in batch], dtype=torch.int64)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
