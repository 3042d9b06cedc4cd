# Accepted: LambdaLR with one callable object per parameter group. LambdaLR's state_dict()
# saves a callable object's __dict__ (plain numbers here), so torch.load(weights_only=True)
# reads it back.
import math

import torch


class WarmupCosineFactor:
    def __init__(self, warmup, total, floor):
        self.warmup = warmup
        self.total = total
        self.floor = floor

    def __call__(self, step):
        if step < self.warmup:
            return float(step) / float(self.warmup)
        span = self.total - self.warmup
        progress = 1.0 if step > self.total else (step - self.warmup) / max(span, 1)
        cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
        return self.floor + (1.0 - self.floor) * cosine


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if not (0 <= warmup_steps <= total_steps and total_steps >= 1):
        raise ValueError(f"invalid warmup_steps={warmup_steps}, total_steps={total_steps}")
    if not (0.0 <= min_lr_ratio <= 1.0):
        raise ValueError(f"invalid min_lr_ratio={min_lr_ratio}")
    factors = [WarmupCosineFactor(warmup_steps, total_steps, min_lr_ratio)
               for _ in optimizer.param_groups]
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=factors)
