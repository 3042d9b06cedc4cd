# submissions/<verdict>/*.py: each file must get exactly its folder's verdict in
# `python -m judge check`. This one is correct but loops over every element in Python:
# the throughput check cuts it short far below the required ratio, so it gets too_slow.
import torch


def masked_mean(x, mask):
    if x.shape != mask.shape:
        raise ValueError("shape mismatch")
    out = torch.zeros(x.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        total, count = 0.0, 0
        for j in range(x.shape[1]):
            if mask[i, j]:
                total += float(x[i, j])
                count += 1
        out[i] = total / count if count else 0.0
    return out
