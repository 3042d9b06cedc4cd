# Bug: padding_side is validated but always pads on the right.
import torch
from torch.nn.utils.rnn import pad_sequence


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left"):
        raise ValueError(padding_side)
    if not batch:
        raise ValueError("empty")
    seqs = [s["input_ids"] for s in batch]
    ids = pad_sequence(seqs, batch_first=True, padding_value=pad_id)
    lengths = torch.tensor([len(s) for s in seqs])
    T = ids.shape[1]
    if pad_to_multiple_of and T % pad_to_multiple_of:
        extra = pad_to_multiple_of - T % pad_to_multiple_of
        ids = torch.cat([ids, torch.full((len(batch), extra), pad_id)], dim=1)
    mask = torch.arange(ids.shape[1]) < lengths[:, None]
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.tensor([s["label"] for s in batch])}
