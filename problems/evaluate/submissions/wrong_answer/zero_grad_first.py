"""Bug: a training habit: model.zero_grad() first. The caller's gradients (say, for a
gradient-accumulation window in progress) are gone."""
import torch


def evaluate(model, loader, loss_fn):
    model.zero_grad()
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
    if count == 0:
        raise ValueError("empty loader")
    return {"loss": total / count, "accuracy": correct / count}
