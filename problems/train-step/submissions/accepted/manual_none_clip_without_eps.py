# Accepted: clears .grad by hand (p.grad = None), switches to training mode only when
# needed, computes the norm as the root of summed squares and clips by max / norm exactly
# (no 1e-6 in the denominator), checks finiteness with math on Python floats.
import math


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    x, y = batch
    if not model.training or not all(m.training for m in model.modules()):
        model.train()
    params = list(model.parameters())
    for p in params:
        p.grad = None

    out = model(x)
    loss = loss_fn(out, y)
    loss.backward()
    loss_value = float(loss.detach())

    norm = None
    if max_grad_norm is not None:
        squares = sum(float(p.grad.double().pow(2).sum()) for p in params if p.grad is not None)
        norm = math.sqrt(squares)
        if norm > max_grad_norm:
            for p in params:
                if p.grad is not None:
                    p.grad.mul_(max_grad_norm / norm)

    bad = not math.isfinite(loss_value) or (norm is not None and not math.isfinite(norm))
    if bad:
        for p in params:
            p.grad = None
        return loss_value, norm
    optimizer.step()
    if scheduler:
        scheduler.step()
    return loss_value, norm
