# Wrong: zero_grad() inside the window, before every micro-batch: only the last
# micro-batch's gradient reaches the step.
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
        total = 0.0
        for input_ids, labels in window:
            optimizer.zero_grad(set_to_none=True)
            logits = model(input_ids)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                   ignore_index=ignore_index, reduction="sum")
            (loss / n).backward()
            total = total + loss.item()
        optimizer.step()
        losses.append(total / n)
    return losses
