"""Reference: one training step in the canonical order, with gradient clipping and a guard
against non-finite losses and gradient norms."""

import math

import torch


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    x, y = batch
    model.train()  # dropout on, BatchNorm on batch statistics: the caller may have evaluated
    # Clear BEFORE backward, to None: whatever the caller left in .grad must not leak into
    # this step, and a parameter this batch does not reach keeps grad None, so the
    # optimizer skips it (zeros would still move it through momentum and weight decay).
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    # Backward even when the loss is not finite: in data-parallel training every rank must
    # run backward (the gradient all-reduce happens there) or the others wait forever.
    loss.backward()
    norm = None
    if max_grad_norm is not None:
        # Returns the total norm BEFORE clipping; the gradients are scaled in place.
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm).item()
    loss_value = loss.item()
    if not math.isfinite(loss_value) or (norm is not None and not math.isfinite(norm)):
        # Skip the update: no optimizer or scheduler step, and no non-finite gradient left.
        optimizer.zero_grad(set_to_none=True)
        return loss_value, norm
    optimizer.step()
    if scheduler is not None:
        scheduler.step()  # after the optimizer, once per taken step
    return loss_value, norm
