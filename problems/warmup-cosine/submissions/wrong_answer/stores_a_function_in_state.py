"""Bug: an LRScheduler subclass that keeps its schedule as a lambda attribute. The inherited
state_dict() saves every attribute but the optimizer, the lambda included, and torch.save
cannot pickle a local function: the checkpoint cannot be written."""
import math

from torch.optim.lr_scheduler import LRScheduler


class WarmupCosine(LRScheduler):
    def __init__(self, optimizer, warmup_steps, total_steps, min_lr_ratio):
        w, t, m = warmup_steps, total_steps, min_lr_ratio
        self.factor = lambda s: s / w if s < w else m + (1 - m) * 0.5 * (
            1 + math.cos(math.pi * min(1.0, (s - w) / max(1, t - w))))
        super().__init__(optimizer)

    def get_lr(self):
        return [base * self.factor(self.last_epoch) for base in self.base_lrs]


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0 or total_steps < 1 or warmup_steps > total_steps:
        raise ValueError("bad warmup_steps / total_steps")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError("bad min_lr_ratio")
    return WarmupCosine(optimizer, warmup_steps, total_steps, min_lr_ratio)
