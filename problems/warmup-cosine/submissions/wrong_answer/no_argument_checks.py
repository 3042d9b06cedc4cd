"""Bug: no argument checks: a warmup longer than the run or a negative min_lr_ratio is
accepted silently (the schedule itself is right)."""
import math

import torch


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    def factor(s):
        if s < warmup_steps:
            return s / warmup_steps
        p = min(1.0, (s - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
