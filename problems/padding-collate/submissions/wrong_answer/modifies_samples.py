# Bug: pads each sample in place (sample["input_ids"] = ...), changing the dataset's dicts.
import torch
import torch.nn.functional as F


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left") or not batch:
        raise ValueError("bad input")
    T = max(len(s["input_ids"]) for s in batch)
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    masks = []
    for s in batch:
        n = len(s["input_ids"])
        spec = (0, T - n) if padding_side == "right" else (T - n, 0)
        s["input_ids"] = F.pad(s["input_ids"], spec, value=pad_id)
        masks.append(F.pad(torch.ones(n, dtype=torch.bool), spec, value=False))
    return {"input_ids": torch.stack([s["input_ids"] for s in batch]),
            "attention_mask": torch.stack(masks),
            "labels": torch.tensor([s["label"] for s in batch])}
