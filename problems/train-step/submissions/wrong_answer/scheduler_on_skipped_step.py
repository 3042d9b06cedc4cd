"""Bug: the scheduler steps even when the update was skipped, so the schedule runs ahead of
the optimizer."""
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
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm).item()
    if math.isfinite(loss.item()) and (norm is None or math.isfinite(norm)):
        optimizer.step()
    else:
        optimizer.zero_grad(set_to_none=True)
    if scheduler is not None:
        scheduler.step()
    return loss.item(), norm
