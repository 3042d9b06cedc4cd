"""Bug: no check for a non-finite loss or norm: a NaN loss makes NaN gradients and the
step writes NaN into every parameter and the optimizer's state."""
import torch


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    x, y = batch
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    norm = None
    if max_grad_norm is not None:
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm).item()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item(), norm
