"""evaluate: one pass over a dataset in evaluation mode, weighing every sample once."""

import torch


def evaluate(model, loader, loss_fn):
    """Return {"loss": float, "accuracy": float} over every sample `loader` yields.

    - loader yields (x, y) batches of different sizes; it may be a one-shot iterable:
      iterate it once and do not call len() on it.
    - loss_fn(output, y) returns the MEAN loss over the batch; "loss" is the mean per-sample
      loss over the whole dataset; "accuracy" the fraction of samples whose
      output.argmax(-1) equals y. An empty loader raises ValueError.
    - Run in eval mode and without building autograd graphs; afterwards every submodule's
      training flag, and every parameter, buffer and .grad, is what it was before.
    """
    raise NotImplementedError("write evaluate")
