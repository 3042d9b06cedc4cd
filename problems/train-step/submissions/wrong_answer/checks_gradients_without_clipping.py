"""Bug: without max_grad_norm it still measures the gradient and skips on a non-finite
norm; the contract checks only the loss then (the caller decides, e.g. with a GradScaler)."""
import math

import torch


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    x, y = batch
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    limit = max_grad_norm if max_grad_norm is not None else math.inf
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), limit).item()
    if not math.isfinite(loss.item()) or not math.isfinite(norm):
        optimizer.zero_grad(set_to_none=True)
        return loss.item(), (norm if max_grad_norm is not None else None)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item(), (norm if max_grad_norm is not None else None)
