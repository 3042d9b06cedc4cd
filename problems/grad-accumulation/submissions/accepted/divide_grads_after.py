# Accepted: streams the loader, backpropagates the summed loss as it is, and divides the
# accumulated gradients by the window's sample count just before clipping and stepping.
# Window ends are found with len(loader).
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    n_batches = len(loader)
    losses = []
    for i, (x, y) in enumerate(loader):
        if i % accum_steps == 0:
            optimizer.zero_grad(set_to_none=True)
            window_loss = torch.zeros((), device=y.device)
            window_samples = 0
        loss = loss_fn(model(x), y)
        loss.backward()
        window_loss += loss.detach()
        window_samples += y.shape[0]
        if (i + 1) % accum_steps == 0 or i + 1 == n_batches:
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.div_(window_samples)
            if max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            losses.append(window_loss.item() / window_samples)
    return losses
