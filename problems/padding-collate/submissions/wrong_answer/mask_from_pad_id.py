# Bug: the mask compares ids with pad_id, so a real token equal to pad_id is masked out.
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left") or not batch:
        raise ValueError("bad input")
    T = max(len(s["input_ids"]) for s in batch)
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
    for i, s in enumerate(batch):
        n = len(s["input_ids"])
        if padding_side == "right":
            ids[i, :n] = s["input_ids"]
        elif n:
            ids[i, -n:] = s["input_ids"]
    return {"input_ids": ids, "attention_mask": ids != pad_id,
            "labels": torch.tensor([s["label"] for s in batch])}
