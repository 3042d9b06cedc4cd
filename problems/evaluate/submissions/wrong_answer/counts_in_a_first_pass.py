"""Bug: counts the samples in a first pass over the loader, then evaluates in a second: a
one-shot loader (a generator) is empty the second time."""
import torch


def evaluate(model, loader, loss_fn):
    n = sum(len(y) for _, y in loader)
    if n == 0:
        raise ValueError("empty loader")
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    total, correct = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            total += loss_fn(out, y).item() * len(y)
            correct += (out.argmax(-1) == y).sum().item()
    for m, flag in modes:
        m.training = flag
    return {"loss": total / n, "accuracy": correct / n}
