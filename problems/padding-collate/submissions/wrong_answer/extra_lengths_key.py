"""Bug: also returns a "lengths" key (handy for pack_padded_sequence), but the contract asks for exactly three keys."""
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if not batch:
        raise ValueError("empty batch")
    if padding_side not in ("right", "left"):
        raise ValueError("padding_side")
    lengths = torch.tensor([len(s["input_ids"]) for s in batch], dtype=torch.long)
    T = int(lengths.max())
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
    pos = torch.arange(T)[None, :]
    mask = pos < lengths[:, None] if padding_side == "right" else pos >= (T - lengths)[:, None]
    ids[mask] = torch.cat([s["input_ids"] for s in batch])
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.tensor([s["label"] for s in batch], dtype=torch.long),
            "lengths": lengths}
