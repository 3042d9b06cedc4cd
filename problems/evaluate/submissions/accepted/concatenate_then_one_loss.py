# Accepted: collects every batch's outputs and targets (under a no_grad decorator), then
# calls loss_fn once on everything: the mean over all samples, which is exactly the
# per-sample mean. Modes come back through module.train(flag), parents first.
import torch


@torch.no_grad()
def _outputs(model, loader):
    outs, targets = [], []
    for x, y in loader:
        outs.append(model(x))
        targets.append(y)
    return outs, targets


def evaluate(model, loader, loss_fn):
    flags = {name: m.training for name, m in model.named_modules()}
    model.eval()
    try:
        outs, targets = _outputs(model, loader)
    finally:
        for name, m in model.named_modules():  # parents come first: children end right
            m.train(flags[name])
    if not outs:
        raise ValueError("evaluate() got an empty loader")
    output, target = torch.cat(outs), torch.cat(targets)
    with torch.no_grad():
        loss = loss_fn(output, target)
    accuracy = (output.argmax(-1) == target).float().mean()
    return {"loss": float(loss), "accuracy": float(accuracy)}
