"""Too slow: correct, but runs the model on one sample at a time (a batch of one each), as
if the loader's batches were in the way."""
import torch


def evaluate(model, loader, loss_fn):
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            for i in range(len(y)):
                out = model(x[i:i + 1])
                total += loss_fn(out, y[i:i + 1]).item()
                correct += int(out.argmax(-1).item() == y[i].item())
                count += 1
    for m, flag in modes:
        m.training = flag
    if count == 0:
        raise ValueError("empty loader")
    return {"loss": total / count, "accuracy": correct / count}
