"""Reference: gradient accumulation whose every update equals one big-batch step on the
mean per-sample loss of its window."""

import torch


def windows(loader, accum_steps):
    """Consecutive groups of accum_steps micro-batches; the last group may be shorter."""
    window = []
    for batch in loader:
        window.append(batch)
        if len(window) == accum_steps:
            yield window
            window = []
    if window:
        yield window


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    losses = []
    for window in windows(loader, accum_steps):
        # Micro-batches differ in size and the last window may be short: the mean is over
        # the window's SAMPLES, so count them (not accum_steps, not micro-batches).
        n = sum(len(y) for _, y in window)
        # Once per window, before the first backward: nothing from an earlier window (or
        # from before this call) may leak into this step.
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for x, y in window:
            loss = loss_fn(model(x), y)  # the SUM of this micro-batch's per-sample losses
            # d(sum_i loss_i / n) = sum_i d(loss_i) / n: scaling each micro-batch by 1/n
            # makes the accumulated gradient that of the window's mean loss.
            (loss / n).backward()
            total = total + loss.detach()  # stays on the device: no sync here
        if max_grad_norm is not None:
            # The accumulated (already normalised) gradient, clipped once, before the step.
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()  # once per optimizer step, after it
        # .item() waits for the GPU: once per window, not once per micro-batch.
        losses.append(float(total.item()) / n)
    return losses
