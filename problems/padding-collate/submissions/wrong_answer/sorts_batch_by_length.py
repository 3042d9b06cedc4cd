"""Bug: sorts the samples longest first (as pack_padded_sequence likes), so the rows no longer follow the order of the batch."""
import torch
from torch.nn.utils.rnn import pad_sequence


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if not batch:
        raise ValueError("empty batch")
    if padding_side not in ("right", "left"):
        raise ValueError("padding_side")
    batch = sorted(batch, key=lambda s: len(s["input_ids"]), reverse=True)
    seqs = [s["input_ids"] for s in batch]
    lengths = torch.tensor([len(x) for x in seqs])
    if padding_side == "right":
        ids = pad_sequence(seqs, batch_first=True, padding_value=pad_id)
    else:
        ids = pad_sequence([x.flip(0) for x in seqs], batch_first=True, padding_value=pad_id).flip(1)
    T = ids.shape[1]
    if pad_to_multiple_of and T % pad_to_multiple_of:
        extra = torch.full((len(seqs), pad_to_multiple_of - T % pad_to_multiple_of), pad_id, dtype=ids.dtype)
        ids = torch.cat([ids, extra] if padding_side == "right" else [extra, ids], dim=1)
        T = ids.shape[1]
    pos = torch.arange(T)[None, :]
    mask = pos < lengths[:, None] if padding_side == "right" else pos >= (T - lengths)[:, None]
    return {"input_ids": ids.long(), "attention_mask": mask,
            "labels": torch.tensor([s["label"] for s in batch], dtype=torch.long)}
