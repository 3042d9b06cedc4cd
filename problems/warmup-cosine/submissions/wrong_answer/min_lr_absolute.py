"""Bug: min_lr_ratio taken as an absolute learning rate (like CosineAnnealingLR's eta_min):
the floor is m itself, not m * base, for every group."""
import math

from torch.optim.lr_scheduler import LRScheduler


class WarmupCosine(LRScheduler):
    def __init__(self, optimizer, warmup_steps, total_steps, min_lr):
        self.warmup_steps, self.total_steps, self.min_lr = warmup_steps, total_steps, min_lr
        super().__init__(optimizer)

    def get_lr(self):
        s, w, t = self.last_epoch, self.warmup_steps, self.total_steps
        if s < w:
            return [base * s / w for base in self.base_lrs]
        p = min(1.0, (s - w) / max(1, t - w))
        return [self.min_lr + (base - self.min_lr) * 0.5 * (1 + math.cos(math.pi * p))
                for base in self.base_lrs]


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0 or total_steps < 1 or warmup_steps > total_steps:
        raise ValueError("bad warmup_steps / total_steps")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError("bad min_lr_ratio")
    return WarmupCosine(optimizer, warmup_steps, total_steps, min_lr_ratio)
