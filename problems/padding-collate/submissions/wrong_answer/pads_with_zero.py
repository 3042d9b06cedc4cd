# Bug: pad_sequence's default padding_value=0 is used instead of pad_id.
import torch
from torch.nn.utils.rnn import pad_sequence


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left") or not batch:
        raise ValueError("bad input")
    seqs = [s["input_ids"] for s in batch]
    if padding_side == "left":
        seqs = [s.flip(0) for s in seqs]
    ids = pad_sequence(seqs, batch_first=True)
    lengths = torch.tensor([len(s) for s in seqs])
    T = ids.shape[1]
    if pad_to_multiple_of and T % pad_to_multiple_of:
        ids = torch.cat([ids, torch.zeros(len(batch), pad_to_multiple_of - T % pad_to_multiple_of,
                                          dtype=ids.dtype)], dim=1)
    mask = torch.arange(ids.shape[1]) < lengths[:, None]
    if padding_side == "left":
        ids, mask = ids.flip(1), mask.flip(1)
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.tensor([s["label"] for s in batch])}
