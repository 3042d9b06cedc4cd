# Wrong: the tutorial recipe, loss = mean loss / accum_steps: right only when every
# micro-batch counts the same number of tokens and the window is full.
import torch.nn.functional as F


def windows(loader, accum_steps):
    window = []
    for batch in loader:
        window.append(batch)
        if len(window) == accum_steps:
            yield window
            window = []
    if window:
        yield window


def train_epoch(model, loader, optimizer, accum_steps, *, ignore_index=-100):
    losses = []
    for window in windows(loader, accum_steps):
        n = int(sum((labels != ignore_index).sum() for _, labels in window))
        if n == 0:
            continue
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for input_ids, labels in window:
            logits = model(input_ids)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                   ignore_index=ignore_index)
            (loss / accum_steps).backward()
            total = total + loss.item() / accum_steps
        optimizer.step()
        losses.append(total)
    return losses
