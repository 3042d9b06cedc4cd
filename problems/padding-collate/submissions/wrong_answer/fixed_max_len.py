# Bug: pads every batch to a global maximum length instead of this batch's longest.
import torch

MAX_LEN = 128


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left") or not batch:
        raise ValueError("bad input")
    T = max(MAX_LEN, max(len(s["input_ids"]) for s in batch))
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
    mask = torch.zeros(len(batch), T, dtype=torch.bool)
    for i, s in enumerate(batch):
        n = len(s["input_ids"])
        sl = slice(0, n) if padding_side == "right" else slice(T - n, T)
        ids[i, sl] = s["input_ids"]
        mask[i, sl] = True
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.tensor([s["label"] for s in batch])}
