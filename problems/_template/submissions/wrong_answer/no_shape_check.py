# Bug: never checks the shapes, so mismatched inputs fail with torch's own RuntimeError
# (or broadcast silently) instead of the ValueError the contract asks for.
def masked_mean(x, mask):
    m = mask.to(x.dtype)
    return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
