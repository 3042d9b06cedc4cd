# Bug: divides by the row length T instead of the number of masked-in positions.
def masked_mean(x, mask):
    if x.shape != mask.shape:
        raise ValueError("shape mismatch")
    return (x * mask).mean(dim=1)
