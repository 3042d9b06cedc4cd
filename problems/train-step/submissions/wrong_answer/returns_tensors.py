"""Bug: returns the loss and the norm as tensors (no .item())."""
import torch


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    x, y = batch
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    norm = None
    if max_grad_norm is not None:
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    if not torch.isfinite(loss) or (norm is not None and not torch.isfinite(norm)):
        optimizer.zero_grad(set_to_none=True)
        return loss.detach(), norm
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.detach(), norm
