"""Bug: padding_side comes before pad_to_multiple_of in the signature. Every call that
passes keywords works; the positional call collate(batch, pad_id, multiple, side) of the
contract hands the multiple to padding_side (and raises ValueError)."""
import torch


def collate(batch, pad_id=0, padding_side="right", pad_to_multiple_of=None):
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    if not batch:
        raise ValueError("empty batch")
    lengths = torch.tensor([len(s["input_ids"]) for s in batch])
    longest = int(lengths.max())
    if pad_to_multiple_of:
        longest = -(-longest // pad_to_multiple_of) * pad_to_multiple_of
    positions = torch.arange(longest)
    if padding_side == "right":
        mask = positions < lengths[:, None]
    else:
        mask = positions >= (longest - lengths)[:, None]
    ids = torch.full((len(batch), longest), pad_id, dtype=torch.long)
    ids[mask] = torch.cat([s["input_ids"] for s in batch]).long()
    labels = torch.tensor([int(s["label"]) for s in batch], dtype=torch.long)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
