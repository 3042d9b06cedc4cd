# A differently written correct solution: masked_fill, then divide by the count.
import torch


def masked_mean(x, mask):
    if x.shape != mask.shape:
        raise ValueError(f"shapes differ: {x.shape} vs {mask.shape}")
    total = x.masked_fill(~mask, 0).sum(dim=-1)
    count = mask.sum(dim=-1)
    return torch.where(count > 0, total / count.clamp(min=1), torch.zeros_like(total))
