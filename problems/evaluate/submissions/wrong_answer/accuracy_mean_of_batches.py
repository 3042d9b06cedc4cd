"""Bug: the accuracy is the mean of the batches' accuracies (the loss is weighted right)."""
import torch


def evaluate(model, loader, loss_fn):
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    total, accs, count = 0.0, [], 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            total += loss_fn(out, y).item() * len(y)
            accs.append((out.argmax(-1) == y).float().mean().item())
            count += len(y)
    for m, flag in modes:
        m.training = flag
    if count == 0:
        raise ValueError("empty loader")
    return {"loss": total / count, "accuracy": sum(accs) / len(accs)}
