"""Bug: one base learning rate for every group (the optimizer's default lr, read from the
first group): groups with their own lr all follow the first group's schedule."""
import math

from torch.optim.lr_scheduler import LRScheduler


class WarmupCosine(LRScheduler):
    def __init__(self, optimizer, warmup_steps, total_steps, min_lr_ratio):
        self.base = optimizer.param_groups[0]["lr"]
        self.w, self.t, self.m = warmup_steps, total_steps, min_lr_ratio
        super().__init__(optimizer)

    def get_lr(self):
        s = self.last_epoch
        if s < self.w:
            f = s / self.w
        else:
            p = min(1.0, (s - self.w) / max(1, self.t - self.w))
            f = self.m + (1 - self.m) * 0.5 * (1 + math.cos(math.pi * p))
        return [self.base * f for _ in self.optimizer.param_groups]


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0 or total_steps < 1 or warmup_steps > total_steps:
        raise ValueError("bad warmup_steps / total_steps")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError("bad min_lr_ratio")
    return WarmupCosine(optimizer, warmup_steps, total_steps, min_lr_ratio)
