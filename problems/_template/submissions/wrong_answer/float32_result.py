# Bug: casts the result to float32, so a float64 input loses its dtype (expect_close
# checks the dtype as well as the values).
def masked_mean(x, mask):
    if x.shape != mask.shape:
        raise ValueError("shape mismatch")
    m = mask.float()
    return ((x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)).float()
