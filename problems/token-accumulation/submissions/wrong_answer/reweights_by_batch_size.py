# Wrong: averages inside each micro-batch, then weights the micro-batches by their number of
# rows: rows hold different numbers of counted tokens, so tokens still weigh differently.
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
        rows = sum(len(labels) for _, labels in window)
        total = 0.0
        for input_ids, labels in window:
            if not (labels != ignore_index).any():
                continue
            logits = model(input_ids)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                   ignore_index=ignore_index)
            (loss * len(labels) / rows).backward()
            total = total + loss.item() * len(labels) / rows
        optimizer.step()
        losses.append(total)
    return losses
