"""Reference: evaluation in eval mode without autograd, weighting every sample once, and
leaving every module's mode, every parameter, buffer and gradient as it found them."""

import torch


def evaluate(model, loader, loss_fn):
    # Save each module's own flag: a submodule may be frozen in eval mode while the rest
    # trains, so model.train() afterwards (or model.train(was_training)) would be wrong.
    modes = [(m, m.training) for m in model.modules()]
    model.eval()  # dropout off; BatchNorm uses its running statistics and leaves them be
    try:
        total_loss = total_correct = None
        count = 0
        with torch.no_grad():  # no graph: less memory and time, and .grad stays untouched
            for x, y in loader:  # once: the loader may be a one-shot iterable, without len()
                output = model(x)
                n = y.shape[0]
                # loss_fn returns the batch MEAN: weigh it by the batch's size so that every
                # sample counts the same, whatever the size of its batch.
                batch_loss = loss_fn(output, y) * n
                batch_correct = (output.argmax(-1) == y).sum()
                # Accumulate on the device: one sync at the end, not one per batch.
                total_loss = batch_loss if total_loss is None else total_loss + batch_loss
                total_correct = (batch_correct if total_correct is None
                                 else total_correct + batch_correct)
                count += n
    finally:
        for module, training in modes:
            module.training = training
    if count == 0:
        raise ValueError("evaluate() needs at least one sample; the loader was empty")
    return {"loss": total_loss.item() / count, "accuracy": total_correct.item() / count}
