# Accepted: the classic counter loop, zero_grad after every step (and once before the first
# window, for gradients left over from before the call), the short last window flushed after
# the loop. Gradients are accumulated by hand with torch.autograd.grad and assigned at the
# end of each window; the clip is written out by hand (without clip_grad_norm_'s 1e-6).
import torch


def _flush(params, acc, samples, optimizer, max_grad_norm, scheduler):
    for p, a in zip(params, acc):
        p.grad = a / samples
    if max_grad_norm is not None:
        norm = torch.sqrt(sum((p.grad ** 2).sum() for p in params))
        scale = torch.clamp(max_grad_norm / norm, max=1.0)
        for p in params:
            p.grad.mul_(scale)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    optimizer.zero_grad()


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer.zero_grad()
    losses = []
    acc = [torch.zeros_like(p) for p in params]
    samples, total, pending = 0, 0.0, 0
    for x, y in loader:
        loss = loss_fn(model(x), y)
        grads = torch.autograd.grad(loss, params)
        for a, g in zip(acc, grads):
            a.add_(g)
        samples += len(y)
        total += loss.detach()
        pending += 1
        if pending == accum_steps:
            _flush(params, acc, samples, optimizer, max_grad_norm, scheduler)
            losses.append((total / samples).item())
            acc = [torch.zeros_like(p) for p in params]
            samples, total, pending = 0, 0.0, 0
    if pending:
        _flush(params, acc, samples, optimizer, max_grad_norm, scheduler)
        losses.append((total / samples).item())
    return losses
