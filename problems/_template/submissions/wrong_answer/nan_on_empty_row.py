# Bug: divides by the raw count, so an empty row gives NaN.
def masked_mean(x, mask):
    if x.shape != mask.shape:
        raise ValueError("shape mismatch")
    m = mask.to(x.dtype)
    return (x * m).sum(1) / m.sum(1)
