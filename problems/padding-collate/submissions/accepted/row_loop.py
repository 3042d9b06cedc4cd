# A loop over rows (not tokens): copy each sequence into its slice of a padded tensor.
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left"):
        raise ValueError("bad padding_side")
    if not batch:
        raise ValueError("empty batch")
    lens = [s["input_ids"].numel() for s in batch]
    T = max(lens)
    if pad_to_multiple_of is not None:
        T = -(-T // pad_to_multiple_of) * pad_to_multiple_of
    ids = torch.full((len(batch), T), pad_id, dtype=torch.int64)
    mask = torch.zeros((len(batch), T), dtype=torch.bool)
    for i, (s, n) in enumerate(zip(batch, lens)):
        if n == 0:
            continue
        if padding_side == "right":
            ids[i, :n] = s["input_ids"]
            mask[i, :n] = True
        else:
            ids[i, T - n:] = s["input_ids"]
            mask[i, T - n:] = True
    labels = torch.tensor([s["label"] for s in batch], dtype=torch.int64)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
