"""Bug: p = (s - W) / (T - W) without max(1, ...): when T == W there is no decay phase and
the first step after the warmup raises ZeroDivisionError."""
import math

import torch


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0 or total_steps < 1 or warmup_steps > total_steps:
        raise ValueError("bad warmup_steps / total_steps")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError("bad min_lr_ratio")

    def factor(s):
        if s < warmup_steps:
            return s / warmup_steps
        p = min(1.0, (s - warmup_steps) / (total_steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
