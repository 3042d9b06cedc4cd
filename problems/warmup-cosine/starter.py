"""warmup-cosine: a learning-rate schedule with linear warmup and cosine decay that
resumes exactly from a checkpoint."""

import math

import torch


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    """Return a torch.optim.lr_scheduler.LRScheduler for `optimizer`.

    After s calls of scheduler.step() (s = 0 right after creation), each parameter group
    with initial learning rate `base` (its lr when make_scheduler is called) has
    W = warmup_steps, T = total_steps, m = min_lr_ratio:

    - s < W:  lr = base * s / W
    - s >= W: p = min(1, (s - W) / max(1, T - W)),
              lr = base * (m + (1 - m) * 0.5 * (1 + cos(pi * p)))

    Its state_dict() must hold everything needed to resume (see the statement).
    Raise ValueError when W < 0, T < 1, W > T or m is outside [0, 1].
    """
    # torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda) multiplies every group's own
    # initial lr by lr_lambda(s). What must lr_lambda depend on, and on nothing else?
    raise NotImplementedError("write make_scheduler")
