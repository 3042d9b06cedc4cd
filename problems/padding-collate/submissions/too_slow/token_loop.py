# Correct, but copies every token with a Python loop: fine for the examples, far too slow on
# a real batch (B = 256, lengths up to 512).
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left"):
        raise ValueError(padding_side)
    if not batch:
        raise ValueError("empty batch")
    T = max(len(s["input_ids"]) for s in batch)
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), T), dtype=torch.bool)
    for i, s in enumerate(batch):
        tokens = s["input_ids"].tolist()
        offset = 0 if padding_side == "right" else T - len(tokens)
        for j, tok in enumerate(tokens):
            ids[i, offset + j] = tok
            mask[i, offset + j] = True
    labels = torch.tensor([s["label"] for s in batch], dtype=torch.long)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
