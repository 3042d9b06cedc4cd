"""Bug: pad_sequence uses pad_id, but the extra columns for pad_to_multiple_of come from F.pad, whose default value is 0."""
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if len(batch) == 0:
        raise ValueError("empty batch")
    if padding_side not in ("right", "left"):
        raise ValueError("padding_side")
    seqs = [s["input_ids"] for s in batch]
    lengths = torch.tensor([len(s) for s in seqs])
    if padding_side == "right":
        ids = pad_sequence(seqs, batch_first=True, padding_value=pad_id)
    else:
        ids = pad_sequence([s.flip(0) for s in seqs], batch_first=True, padding_value=pad_id).flip(1)
    T = ids.shape[1]
    if pad_to_multiple_of is not None and T % pad_to_multiple_of:
        extra = pad_to_multiple_of - T % pad_to_multiple_of
        ids = F.pad(ids, (0, extra) if padding_side == "right" else (extra, 0))
        T += extra
    pos = torch.arange(T)[None, :]
    mask = pos < lengths[:, None] if padding_side == "right" else pos >= (T - lengths)[:, None]
    labels = torch.tensor([s["label"] for s in batch], dtype=torch.long)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
