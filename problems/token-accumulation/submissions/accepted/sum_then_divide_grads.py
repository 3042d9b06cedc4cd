# Accepted: backpropagates each micro-batch's SUMMED token loss, counts tokens on the way,
# and divides the accumulated gradients by the window's count before the step (so it
# needs no look-ahead). model.zero_grad at each window's start.
import torch
import torch.nn.functional as F


def train_epoch(model, loader, optimizer, accum_steps, *, ignore_index=-100):
    losses = []
    it = iter(loader)
    while True:
        window = []
        for _ in range(accum_steps):
            batch = next(it, None)
            if batch is None:
                break
            window.append(batch)
        if not window:
            return losses
        model.zero_grad(set_to_none=True)
        n_tokens = torch.zeros((), dtype=torch.long)
        loss_sum = torch.zeros((), dtype=torch.float64)
        for input_ids, labels in window:
            logits = model(input_ids)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1),
                                   ignore_index=ignore_index, reduction="sum")
            loss.backward()
            n_tokens += (labels != ignore_index).sum().cpu()
            loss_sum += loss.detach().double().cpu()
        n = int(n_tokens)
        if n == 0:
            continue
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.div_(n)
        optimizer.step()
        losses.append(loss_sum.item() / n)
