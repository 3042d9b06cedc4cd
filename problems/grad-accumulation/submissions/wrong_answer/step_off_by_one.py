# Bug: steps when i % accum_steps == 0, i.e. right after micro-batch 0, then after
# micro-batches accum_steps, 2*accum_steps, ...: every window is shifted by one.
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    n_batches = len(loader)
    losses = []
    optimizer.zero_grad()
    total, samples = 0.0, 0
    for i, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        total += loss.detach()
        samples += len(y)
        if i % accum_steps == 0 or i + 1 == n_batches:
            for p in model.parameters():
                p.grad /= samples
            if max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
            losses.append(total.item() / samples)
            total, samples = 0.0, 0
    return losses
