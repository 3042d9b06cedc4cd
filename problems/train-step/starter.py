"""train-step: one training step, in the right order, with clipping and set_to_none."""

import math

import torch


def train_step(model, batch, optimizer, loss_fn, *, max_grad_norm=None, scheduler=None):
    """Run one training step on `batch` and return (loss, grad_norm) as Python floats.

    - batch is (x, y); the step runs with model.train(); loss = loss_fn(model(x), y).
    - Clear the gradients before backward with set_to_none=True semantics.
    - With max_grad_norm: clip the total 2-norm of all gradients to it before the step and
      return the norm before clipping; without it, return None as the norm.
    - optimizer.step(), then scheduler.step() once if a scheduler is given.
    - A non-finite loss (or, with max_grad_norm, a non-finite norm) skips the update:
      no optimizer or scheduler step, gradients set to None; still return the values.
    - Exactly one forward and one backward per call, a non-finite loss included.
    """
    raise NotImplementedError("write train_step")
