"""Too slow: correct, but it walks every batch sample by sample in Python, calling .item()
on each prediction and each sample's loss."""
import torch


def evaluate(model, loader, loss_fn):
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            for i in range(len(y)):
                total += loss_fn(out[i:i + 1], y[i:i + 1]).item()
                correct += int(out[i].argmax().item() == y[i].item())
                count += 1
    for m, flag in modes:
        m.training = flag
    if count == 0:
        raise ValueError("empty loader")
    return {"loss": total / count, "accuracy": correct / count}
