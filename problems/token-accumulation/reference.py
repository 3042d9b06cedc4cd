"""Reference: gradient accumulation whose every update equals one step on the mean
cross-entropy over all the counted tokens of its window."""

import torch.nn.functional as F


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


def train_epoch(model, loader, optimizer, accum_steps, *, ignore_index=-100):
    losses = []
    for window in windows(loader, accum_steps):
        # The window's mean is over its COUNTED tokens: count them all before the first
        # backward (micro-batches hold very different numbers; ignored labels do not count).
        counted = sum((labels != ignore_index).sum() for _, labels in window)
        n = int(counted)  # one host sync per window
        if n == 0:
            continue  # nothing to learn from: no step, no loss
        # Once per window, before the first backward: gradients from an earlier window (or
        # from before this call) must not leak into this step.
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for input_ids, labels in window:
            logits = model(input_ids)
            # The SUM over this micro-batch's counted tokens, divided by the WINDOW's count:
            # summed over the window, that is the mean over all its counted tokens. (A mean
            # per micro-batch would weigh the tokens of sparse micro-batches more.)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                   ignore_index=ignore_index, reduction="sum")
            (loss / n).backward()
            total = total + loss.detach()
        optimizer.step()
        losses.append(float(total) / n)
    return losses

