"""Correct: torch.nn.utils.rnn.pad_sequence; left padding by flipping each sequence, padding, flipping back."""
import torch
from torch.nn.utils.rnn import pad_sequence


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    if not batch:
        raise ValueError("empty batch")
    seqs = [s["input_ids"] for s in batch]
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    longest = int(lengths.max())
    T = longest
    if pad_to_multiple_of:
        T = -(-T // pad_to_multiple_of) * pad_to_multiple_of
    if padding_side == "right":
        ids = pad_sequence(seqs, batch_first=True, padding_value=pad_id)
    else:
        ids = pad_sequence([s.flip(0) for s in seqs], batch_first=True, padding_value=pad_id).flip(1)
    ids = ids.to(torch.int64)
    if T > longest:
        extra = torch.full((len(batch), T - longest), pad_id, dtype=torch.int64)
        ids = torch.cat([ids, extra] if padding_side == "right" else [extra, ids], dim=1)
    pos = torch.arange(T)
    if padding_side == "right":
        mask = pos.unsqueeze(0) < lengths.unsqueeze(1)
    else:
        mask = pos.unsqueeze(0) >= (T - lengths).unsqueeze(1)
    labels = torch.tensor([int(s["label"]) for s in batch], dtype=torch.int64)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
