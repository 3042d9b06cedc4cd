"""Bug: a hand-written clip multiplies the gradient by max_grad_norm / (norm + 1e-6)
without min(1, ...): a gradient already below max_grad_norm is scaled UP to it. Right
whenever clipping clips; wrong whenever it should leave the gradient alone."""
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    losses, window = [], []
    batches = list(loader)
    for start in range(0, len(batches), accum_steps):
        window = batches[start:start + accum_steps]
        n = sum(len(y) for _, y in window)
        optimizer.zero_grad()
        total = 0.0
        for x, y in window:
            loss = loss_fn(model(x), y)
            (loss / n).backward()
            total += loss.item()
        if max_grad_norm is not None:
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
            coef = max_grad_norm / (norm + 1e-6)
            for g in grads:
                g.mul_(coef)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(total / n)
    return losses
