# Bug: returns the sum of the masked-in values, not their mean.
def masked_mean(x, mask):
    if x.shape != mask.shape:
        raise ValueError("shape mismatch")
    return (x * mask).sum(dim=1)
