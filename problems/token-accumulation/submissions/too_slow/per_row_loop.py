# Correct but too slow: runs forward and backward on one row at a time (to "handle the
# padding"), so every micro-batch costs B small passes instead of one.
import torch.nn.functional as F


def train_epoch(model, loader, optimizer, accum_steps, *, ignore_index=-100):
    batches = list(loader)
    losses = []
    for start in range(0, len(batches), accum_steps):
        window = batches[start:start + accum_steps]
        n = sum(int((labels != ignore_index).sum()) for _, labels in window)
        if n == 0:
            continue
        optimizer.zero_grad()
        total = 0.0
        for input_ids, labels in window:
            for row in range(input_ids.shape[0]):
                if not (labels[row] != ignore_index).any():
                    continue
                logits = model(input_ids[row:row + 1])
                loss = F.cross_entropy(logits[0], labels[row], ignore_index=ignore_index,
                                       reduction="sum")
                (loss / n).backward()
                total += loss.item()
        optimizer.step()
        losses.append(total / n)
    return losses
