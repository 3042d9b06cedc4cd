# Bug: zero_grad() at the top of every micro-batch, so only the last micro-batch of each
# window reaches the step.
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    batches = list(loader)
    losses = []
    for start in range(0, len(batches), accum_steps):
        window = batches[start:start + accum_steps]
        n = sum(len(y) for _, y in window)
        total = 0.0
        for x, y in window:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            (loss / n).backward()
            total += loss.item()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(total / n)
    return losses
