# Bug: reads the mask the wrong way round (True taken as "padding"), averaging the
# positions that should be left out.
def masked_mean(x, mask):
    if x.shape != mask.shape:
        raise ValueError("shape mismatch")
    keep = (~mask).to(x.dtype)
    return (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)
