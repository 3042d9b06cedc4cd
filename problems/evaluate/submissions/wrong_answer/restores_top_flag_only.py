"""Bug: the common `was_training = model.training; ...; model.train(was_training)`: it
restores one flag, recursively, over every submodule, so a submodule frozen in eval mode
while the rest trains comes back in training mode."""
import torch


def evaluate(model, loader, loss_fn):
    was_training = model.training
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            total += loss_fn(out, y).item() * len(y)
            correct += (out.argmax(-1) == y).sum().item()
            count += len(y)
    model.train(was_training)
    if count == 0:
        raise ValueError("empty loader")
    return {"loss": total / count, "accuracy": correct / count}
