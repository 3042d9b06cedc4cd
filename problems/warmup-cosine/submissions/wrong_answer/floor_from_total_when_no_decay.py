"""Bug: "constant after T" written as s >= T, which at T == W skips the peak: at s = W the
rate must be base (p = 0), not the floor."""
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
        if s >= T:
            return m
        p = (s - W) / (T - W)
        return m + (1 - m) * 0.5 * (1 + math.cos(math.pi * p))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
