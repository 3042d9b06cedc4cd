# Bug: clears the gradients only after each step, so gradients already on the parameters
# when train_epoch is called (an earlier epoch's, an evaluation's) leak into the first step.
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
            loss = loss_fn(model(x), y)
            (loss / n).backward()
            total += loss.detach()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        optimizer.zero_grad()
        losses.append(total.item() / n)
    return losses
