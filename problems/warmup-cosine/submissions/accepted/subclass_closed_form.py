# Accepted: an LRScheduler subclass whose get_lr() is the closed form in self.last_epoch
# (the step count) and self.base_lrs (each group's initial lr). Its settings are plain
# attributes, so the inherited state_dict() saves them along with last_epoch.
import math

from torch.optim.lr_scheduler import LRScheduler


class WarmupCosine(LRScheduler):
    def __init__(self, optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
        if warmup_steps < 0 or total_steps < 1 or warmup_steps > total_steps:
            raise ValueError("need 0 <= warmup_steps <= total_steps and total_steps >= 1")
        if not 0 <= min_lr_ratio <= 1:
            raise ValueError("min_lr_ratio must be in [0, 1]")
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.min_lr_ratio = min_lr_ratio
        super().__init__(optimizer)

    def factor(self, s):
        if s < self.warmup_steps:
            return s / self.warmup_steps
        decay = max(1, self.total_steps - self.warmup_steps)
        p = min(1.0, (s - self.warmup_steps) / decay)
        return self.min_lr_ratio + (1 - self.min_lr_ratio) * (1 + math.cos(math.pi * p)) / 2

    def get_lr(self):
        f = self.factor(self.last_epoch)
        return [base * f for base in self.base_lrs]


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    return WarmupCosine(optimizer, warmup_steps, total_steps, min_lr_ratio)
