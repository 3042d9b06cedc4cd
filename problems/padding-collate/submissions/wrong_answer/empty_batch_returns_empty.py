# Bug: an empty batch quietly returns empty tensors instead of raising ValueError.
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left"):
        raise ValueError(padding_side)
    if not batch:
        return {"input_ids": torch.zeros(0, 0, dtype=torch.long),
                "attention_mask": torch.zeros(0, 0, dtype=torch.bool),
                "labels": torch.zeros(0, dtype=torch.long)}
    lengths = torch.tensor([len(s["input_ids"]) for s in batch])
    T = int(lengths.max())
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    pos = torch.arange(T)
    mask = pos < lengths[:, None] if padding_side == "right" else pos >= (T - lengths)[:, None]
    ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
    ids[mask] = torch.cat([s["input_ids"] for s in batch])
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.tensor([s["label"] for s in batch])}
