# Bug: clips the accumulated gradient of the SUMMED loss and only then divides by the
# window's sample count, so the clipped norm is max_grad_norm / n, not max_grad_norm.
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    batches = list(loader)
    losses = []
    for start in range(0, len(batches), accum_steps):
        window = batches[start:start + accum_steps]
        n = sum(len(y) for _, y in window)
        optimizer.zero_grad()
        total = 0.0
        for x, y in window:
            loss = loss_fn(model(x), y)
            loss.backward()
            total += loss.detach()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        for p in model.parameters():
            p.grad /= n
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(total.item() / n)
    return losses
