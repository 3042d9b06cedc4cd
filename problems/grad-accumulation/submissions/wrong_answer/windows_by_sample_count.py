"""Bug: windows are cut by sample count (accum_steps times the first micro-batch's size),
not by micro-batch count. With micro-batches of different sizes the windows come out
other than accum_steps micro-batches each; the rest is right (normalised by the window's
samples, one clip, a step for the leftover at the end)."""
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    def step():
        for p in model.parameters():
            if p.grad is not None:
                p.grad.div_(seen)
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(total.item() / seen)

    losses = []
    target = None  # the samples of one "big batch"
    seen, total = 0, 0.0
    optimizer.zero_grad()
    for x, y in loader:
        if target is None:
            target = accum_steps * len(y)
        loss = loss_fn(model(x), y)
        loss.backward()
        total = total + loss.detach()
        seen += len(y)
        if seen >= target:
            step()
            optimizer.zero_grad()
            seen, total = 0, 0.0
    if seen:
        step()
    return losses
