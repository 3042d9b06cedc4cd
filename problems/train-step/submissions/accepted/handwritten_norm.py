# Accepted: model.zero_grad() (set_to_none by default), a hand-written total norm over the
# parameters that have gradients, and clipping by scaling every gradient in place.
import torch


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    inputs, targets = batch
    model.train()
    model.zero_grad(set_to_none=True)
    loss = loss_fn(model(inputs), targets)
    loss.backward()

    total_norm = None
    if max_grad_norm is not None:
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        total_norm = torch.linalg.vector_norm(
            torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        scale = torch.clamp(max_grad_norm / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(scale)

    finite = bool(torch.isfinite(loss))
    if total_norm is not None:
        finite = finite and bool(torch.isfinite(total_norm))
    if finite:
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    else:
        model.zero_grad(set_to_none=True)
    return loss.item(), None if total_norm is None else total_norm.item()
