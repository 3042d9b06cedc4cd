# Bug: the tutorial recipe loss / accum_steps. With a sum loss and unequal micro-batches
# (and a short last window) that is not the mean over the window's samples.
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    n = len(loader)
    losses, total, samples = [], 0.0, 0
    optimizer.zero_grad()
    for i, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y)
        (loss / accum_steps).backward()
        total += loss.detach()
        samples += len(y)
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            if max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
            losses.append(total.item() / samples)
            total, samples = 0.0, 0
    return losses
