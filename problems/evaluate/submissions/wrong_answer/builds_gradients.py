"""Bug: no torch.no_grad(): every forward builds an autograd graph it never uses (memory
and time), although .item() makes the numbers right."""


def evaluate(model, loader, loss_fn):
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    total, correct, count = 0.0, 0, 0
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
