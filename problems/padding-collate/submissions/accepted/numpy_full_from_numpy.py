"""Correct: build the padded ids and the mask as numpy arrays (np.full + row slices), then torch.from_numpy."""
import numpy as np
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left"):
        raise ValueError("padding_side must be 'right' or 'left'")
    if batch is None or len(batch) == 0:
        raise ValueError("cannot collate an empty batch")
    arrays = [np.asarray(s["input_ids"].numpy(), dtype=np.int64) for s in batch]
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    T = int(lengths.max())
    if pad_to_multiple_of is not None:
        r = T % pad_to_multiple_of
        if r:
            T += pad_to_multiple_of - r
    B = len(arrays)
    ids = np.full((B, T), pad_id, dtype=np.int64)
    for row, a in zip(ids, arrays):
        if a.shape[0]:
            if padding_side == "right":
                row[: a.shape[0]] = a
            else:
                row[T - a.shape[0]:] = a
    ar = np.arange(T)[None, :]
    if padding_side == "right":
        mask = ar < lengths[:, None]
    else:
        mask = ar >= (T - lengths)[:, None]
    labels = np.array([s["label"] for s in batch], dtype=np.int64)
    return {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask),
            "labels": torch.from_numpy(labels)}
