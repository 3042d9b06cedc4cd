"""Bug: zero_grad() between backward and the step: the step sees no gradient at all."""
import math

import torch


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    x, y = batch
    model.train()
    loss = loss_fn(model(x), y)
    loss.backward()
    norm = None
    if max_grad_norm is not None:
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm).item()
    if not math.isfinite(loss.item()) or (norm is not None and not math.isfinite(norm)):
        optimizer.zero_grad(set_to_none=True)
        return loss.item(), norm
    optimizer.zero_grad()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item(), norm
