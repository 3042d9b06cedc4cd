"""Bug: len(loader) to find the number of samples: a one-shot iterable has no len()
(TypeError), and for a DataLoader it counts batches anyway."""
import torch


def evaluate(model, loader, loss_fn):
    if len(loader) == 0:
        raise ValueError("empty loader")
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
    return {"loss": total / count, "accuracy": correct / count}
