# Accepted: never asks len(loader). It peeks one micro-batch ahead to know whether the
# current one ends the epoch, clears gradients with model.zero_grad(), and scales the
# gradients with a manual multiply by 1/n after the window.
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    it = iter(loader)
    nxt = next(it, None)
    losses = []
    count = 0
    samples = 0
    summed = 0.0
    while nxt is not None:
        x, y = nxt
        nxt = next(it, None)
        if count == 0:
            model.zero_grad()
            samples = 0
            summed = 0.0
        out = model(x)
        loss = loss_fn(out, y)
        loss.backward()
        summed = summed + loss.detach()
        samples += len(y)
        count += 1
        if count == accum_steps or nxt is None:
            with torch.no_grad():
                for p in model.parameters():
                    if p.grad is not None:
                        p.grad.mul_(1.0 / samples)
            if max_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_grad_norm)
            optimizer.step()
            if scheduler:
                scheduler.step()
            losses.append(float(summed) / samples)
            count = 0
    return losses
