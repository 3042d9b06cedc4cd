"""Bug: model.train() at the end: the encoder that was frozen in eval mode now trains too
(its dropout on, its BatchNorm statistics drifting)."""
import torch


def evaluate(model, loader, loss_fn):
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            total += loss_fn(out, y).item() * len(y)
            correct += (out.argmax(-1) == y).sum().item()
            count += len(y)
    model.train()
    if count == 0:
        raise ValueError("empty loader")
    return {"loss": total / count, "accuracy": correct / count}
