"""Bug: uses clip_grad_value_ (element-wise clamp) where the statement asks for clipping by the total norm."""
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    losses = []

    def flush(window):
        n = sum(len(y) for _, y in window)
        optimizer.zero_grad()
        total = 0.0
        for x, y in window:
            loss = loss_fn(model(x), y)
            (loss / n).backward()
            total = total + loss.detach()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_value_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append((total / n).item())

    window = []
    for x, y in loader:
        window.append((x, y))
        if len(window) == accum_steps:
            flush(window)
            window = []
    if window:
        flush(window)
    return losses
