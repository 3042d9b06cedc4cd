"""Bug: averages the batch means: a sample in a batch of 1 weighs as much as a whole batch
of 40."""
import torch


def evaluate(model, loader, loss_fn):
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    losses, correct, count = [], 0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            losses.append(loss_fn(out, y).item())
            correct += (out.argmax(-1) == y).sum().item()
            count += len(y)
    for m, flag in modes:
        m.training = flag
    if count == 0:
        raise ValueError("empty loader")
    return {"loss": sum(losses) / len(losses), "accuracy": correct / count}
