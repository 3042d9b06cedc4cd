"""Reference solution. The judge takes every expected value from it, computed in a runner
process of its own, never in the submission's."""


def masked_mean(x, mask):
    """Mean of x[i, j] over the j where mask[i, j] is True, per row; 0.0 for an empty row."""
    if x.shape != mask.shape:
        raise ValueError(f"x {tuple(x.shape)} and mask {tuple(mask.shape)} differ in shape")
    mask = mask.to(x.dtype)
    count = mask.sum(dim=1)
    # clamp(min=1): an empty row divides 0 by 1 and gives 0.0 instead of NaN
    return (x * mask).sum(dim=1) / count.clamp(min=1)
