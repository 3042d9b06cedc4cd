# Bug: treats loss_fn as a mean loss: divides each micro-batch's sum by its size, then by
# accum_steps. That averages micro-batch means, which weights the samples of small
# micro-batches more (and a short last window is divided by too much).
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    n = len(loader)
    losses, total = [], 0.0
    optimizer.zero_grad()
    for i, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y) / len(y) / accum_steps
        loss.backward()
        total += loss.detach()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            if max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
            losses.append(total.item())
            total = 0.0
    return losses
