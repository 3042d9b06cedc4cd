"""Bug: the accuracy is computed after the loop from the last batch's outputs only."""
import torch


def evaluate(model, loader, loss_fn):
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    total, count = 0.0, 0
    out = y = None
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            total += loss_fn(out, y).item() * len(y)
            count += len(y)
    for m, flag in modes:
        m.training = flag
    if count == 0:
        raise ValueError("empty loader")
    accuracy = (out.argmax(-1) == y).float().mean().item()
    return {"loss": total / count, "accuracy": accuracy}
