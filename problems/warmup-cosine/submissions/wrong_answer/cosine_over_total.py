"""Bug: the cosine runs over T instead of T - W: p = (s - W) / T, so the decay has not
reached the floor at T (and the clamp then jumps to it)."""
import math

import torch


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0 or total_steps < 1 or warmup_steps > total_steps:
        raise ValueError("bad warmup_steps / total_steps")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError("bad min_lr_ratio")
    W, T, m = warmup_steps, total_steps, min_lr_ratio

    def factor(s):
        if s < W:
            return s / W
        p = min(1.0, (s - W) / T)
        return m + (1 - m) * 0.5 * (1 + math.cos(math.pi * p))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
