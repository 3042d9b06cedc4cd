# Accepted: clears the gradients before the forward AND after the step (freeing their
# memory between steps), uses clip_grad_norm_ without foreach, and tests finiteness on
# tensors before a single sync.
import torch
from torch.nn.utils import clip_grad_norm_


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    model.train()
    optimizer.zero_grad()  # set_to_none=True is the default since torch 2.0
    x, y = batch
    loss = loss_fn(model(x), y)
    loss.backward()
    norm = None
    ok = torch.isfinite(loss.detach())
    if max_grad_norm is not None:
        norm = clip_grad_norm_(model.parameters(), max_norm=max_grad_norm, norm_type=2.0,
                               foreach=False)
        ok = ok & torch.isfinite(norm)
    if ok.item():
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach().item(), (float(norm) if norm is not None else None)
