"""Bug: returns before backward when the loss is not finite. On one process the result
looks the same; under DistributedDataParallel the other ranks wait in backward's
all-reduce for this one forever."""
import math

import torch


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    x, y = batch
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    if not math.isfinite(loss.item()):
        return loss.item(), (math.nan if max_grad_norm is not None else None)
    loss.backward()
    norm = None
    if max_grad_norm is not None:
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm).item()
        if not math.isfinite(norm):
            optimizer.zero_grad(set_to_none=True)
            return loss.item(), norm
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item(), norm
