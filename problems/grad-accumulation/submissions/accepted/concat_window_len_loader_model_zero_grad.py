"""Uses len(loader) to know the window boundaries, and concatenates each window into one batch (mean of the summed loss)."""
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    total_batches = len(loader)
    result = []
    xs, ys = [], []
    for idx, (x, y) in enumerate(loader, start=1):
        xs.append(x)
        ys.append(y)
        if idx % accum_steps == 0 or idx == total_batches:
            X = torch.cat(xs)
            Y = torch.cat(ys)
            model.zero_grad()
            loss = loss_fn(model(X), Y) / Y.shape[0]
            loss.backward()
            if max_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            if scheduler:
                scheduler.step()
            result.append(loss.item())
            xs, ys = [], []
    return result
