"""Collects each window's micro-batches first, then scales every micro-batch loss by 1/n."""
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    losses = []

    def flush(window):
        n = sum(len(y) for _, y in window)
        optimizer.zero_grad(set_to_none=True)
        total = None
        for x, y in window:
            loss = loss_fn(model(x), y)
            (loss / n).backward()
            d = loss.detach()
            total = d if total is None else total + d
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(float(total.item()) / n)

    window = []
    for i, (x, y) in enumerate(loader):
        window.append((x, y))
        if len(window) == accum_steps:
            flush(window)
            window = []
    if window:
        flush(window)
    return losses
