# Correct but too slow: "the loss is a sum over samples, so accumulate sample by sample".
# Every sample gets its own forward and backward pass, so an epoch pays the per-call
# overhead of every layer once per SAMPLE instead of once per micro-batch.
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
            for i in range(len(y)):
                loss = loss_fn(model(x[i:i + 1]), y[i:i + 1])
                (loss / n).backward()
                total += loss.detach()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(float(total) / n)
    return losses
