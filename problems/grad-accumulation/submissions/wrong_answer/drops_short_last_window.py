# Bug: steps only when a full window of accum_steps micro-batches has been seen; the
# micro-batches of a short last window are computed but never make a step.
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    losses, window = [], []
    for x, y in loader:
        window.append((x, y))
        if len(window) < accum_steps:
            continue
        n = sum(len(b[1]) for b in window)
        optimizer.zero_grad()
        total = 0.0
        for bx, by in window:
            loss = loss_fn(model(bx), by)
            (loss / n).backward()
            total += loss.detach()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(total.item() / n)
        window = []
    return losses
