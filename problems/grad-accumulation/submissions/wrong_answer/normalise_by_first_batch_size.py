"""Bug: normalises by len(first micro-batch) * accum_steps (assumes equal micro-batches and a full window) instead of the window's real sample count."""
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    losses = []
    batch_size = None
    running = 0.0
    for i, (x, y) in enumerate(loader):
        if batch_size is None:
            batch_size = len(y)
        n = batch_size * accum_steps
        if i % accum_steps == 0:
            optimizer.zero_grad()
            running = 0.0
        loss = loss_fn(model(x), y)
        (loss / n).backward()
        running = running + loss.detach()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            if max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            losses.append((running / n).item())
    return losses
