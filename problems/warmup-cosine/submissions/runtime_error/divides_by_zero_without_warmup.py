"""Bug: the warmup factor min(1, s / W) divides by zero when W = 0 (no warmup): LambdaLR
calls the factor at creation, so make_scheduler itself raises ZeroDivisionError."""
import math

import torch


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0 or total_steps < 1 or warmup_steps > total_steps:
        raise ValueError("bad warmup_steps / total_steps")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError("bad min_lr_ratio")

    def factor(s):
        warm = min(1.0, s / warmup_steps)
        if s <= warmup_steps:
            return warm
        p = min(1.0, (s - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
