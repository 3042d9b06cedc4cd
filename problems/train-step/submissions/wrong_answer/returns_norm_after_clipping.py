"""Bug: returns the norm measured after clipping (at most max_grad_norm), not before."""
import math

import torch


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    x, y = batch
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    norm = None
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        norm = torch.norm(torch.stack([p.grad.norm() for p in model.parameters()
                                       if p.grad is not None])).item()
    if not math.isfinite(loss.item()) or (norm is not None and not math.isfinite(norm)):
        optimizer.zero_grad(set_to_none=True)
        return loss.item(), norm
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item(), norm
