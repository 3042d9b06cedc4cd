"""Backprops the raw summed losses with a manual counter, then divides .grad by the window's sample count and clips by hand."""
import torch


def _step(model, optimizer, scheduler, max_grad_norm, n_samples):
    params = [p for p in model.parameters() if p.grad is not None]
    with torch.no_grad():
        for p in params:
            p.grad.div_(n_samples)
        if max_grad_norm is not None and params:
            norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params))
            coef = max_grad_norm / (norm + 1e-6)
            if coef < 1:
                for p in params:
                    p.grad.mul_(coef.to(p.grad.dtype))
    optimizer.step()
    if scheduler is not None:
        scheduler.step()


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    out = []
    count = 0          # micro-batches in the current window
    n_samples = 0
    running = 0.0
    for x, y in loader:
        if count == 0:
            optimizer.zero_grad(set_to_none=False)
            n_samples = 0
            running = 0.0
        loss = loss_fn(model(x), y)
        loss.backward()
        running = running + loss.detach()
        n_samples += y.shape[0]
        count += 1
        if count == accum_steps:
            _step(model, optimizer, scheduler, max_grad_norm, n_samples)
            out.append(running.item() / n_samples)
            count = 0
    if count:
        _step(model, optimizer, scheduler, max_grad_norm, n_samples)
        out.append(running.item() / n_samples)
    return out
