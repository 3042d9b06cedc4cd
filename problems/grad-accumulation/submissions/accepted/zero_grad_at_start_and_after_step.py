"""Clears the grads once at the start and again after every step; lookahead iterator finds the window end; hand-written clip without the 1e-6."""
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    result = []
    optimizer.zero_grad()
    it = iter(loader)
    nxt = next(it, None)
    while nxt is not None:
        window = []
        while nxt is not None and len(window) < accum_steps:
            window.append(nxt)
            nxt = next(it, None)
        n = sum(int(y.shape[0]) for _, y in window)
        acc = torch.zeros((), dtype=torch.float64, device=window[0][1].device)
        for x, y in window:
            loss = loss_fn(model(x), y)
            loss.mul(1.0 / n).backward()
            acc += loss.detach()
        if max_grad_norm is not None:
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
            if total > max_grad_norm:
                for g in grads:
                    g.mul_(max_grad_norm / total)
        optimizer.step()
        optimizer.zero_grad()
        if scheduler is not None:
            scheduler.step()
        result.append(acc.item() / n)
    return result
