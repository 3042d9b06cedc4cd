# judge-check: needs cuda
# Correct but too slow ON A GPU: `running += loss.item()` after every micro-batch makes the
# CPU wait for the GPU to finish each micro-batch before it may queue the next one, so the
# GPU idles while Python launches kernels. On a CPU there is nothing to wait for and it is
# as fast as the reference (this file is judged only where CUDA is available).
import torch


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    batches = list(loader)
    losses = []
    for start in range(0, len(batches), accum_steps):
        window = batches[start:start + accum_steps]
        n = sum(len(y) for _, y in window)
        optimizer.zero_grad()
        running = 0.0
        for x, y in window:
            loss = loss_fn(model(x), y)
            (loss / n).backward()
            running += loss.item()  # a host sync per micro-batch
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(running / n)
    return losses
