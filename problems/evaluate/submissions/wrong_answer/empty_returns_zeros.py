"""Bug: an empty loader returns zeros instead of raising ValueError: a broken data
pipeline then reports a perfect loss of 0.0."""
import torch


def evaluate(model, loader, loss_fn):
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            total += loss_fn(out, y).item() * len(y)
            correct += (out.argmax(-1) == y).sum().item()
            count += len(y)
    for m, flag in modes:
        m.training = flag
    return {"loss": total / max(count, 1), "accuracy": correct / max(count, 1)}
