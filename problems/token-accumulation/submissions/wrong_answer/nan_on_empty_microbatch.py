# Wrong: weighs each micro-batch's mean loss by its share of the tokens (mean_i * n_i / N),
# but a micro-batch with no counted token has mean 0/0 = NaN, and NaN * 0 is still NaN.
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
            n_i = int((labels != ignore_index).sum())
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                   ignore_index=ignore_index)
            (loss * n_i / n).backward()
            total = total + loss.item() * n_i / n
        optimizer.step()
        losses.append(total)
    return losses
