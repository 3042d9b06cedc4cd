"""Bug: clip_grad_value_ clamps each element to ±max_grad_norm, which changes the
gradient's direction; the norm returned is computed by hand before it."""
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
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        norm = torch.cat([g.reshape(-1) for g in grads]).norm().item()
        torch.nn.utils.clip_grad_value_(model.parameters(), max_grad_norm)
    if not math.isfinite(loss.item()) or (norm is not None and not math.isfinite(norm)):
        optimizer.zero_grad(set_to_none=True)
        return loss.item(), norm
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item(), norm
