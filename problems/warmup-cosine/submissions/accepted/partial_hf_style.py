# Accepted: written like transformers' get_cosine_schedule_with_warmup (a module-level
# function bound with functools.partial), with the progress clamped at 1 so the rate stays
# at its floor after total_steps, and a floor of min_lr_ratio.
import math
from functools import partial

from torch.optim.lr_scheduler import LambdaLR


def _lr_lambda(current_step, *, num_warmup_steps, num_training_steps, min_lr_ratio):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))
    progress = float(current_step - num_warmup_steps) / float(
        max(1, num_training_steps - num_warmup_steps))
    progress = min(progress, 1.0)
    return max(min_lr_ratio, min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (
        1.0 + math.cos(math.pi * progress)))


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0:
        raise ValueError("warmup_steps < 0")
    if total_steps < 1:
        raise ValueError("total_steps < 1")
    if warmup_steps > total_steps:
        raise ValueError("warmup_steps > total_steps")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError("min_lr_ratio outside [0, 1]")
    lr_lambda = partial(_lr_lambda, num_warmup_steps=warmup_steps,
                        num_training_steps=total_steps, min_lr_ratio=min_lr_ratio)
    return LambdaLR(optimizer, lr_lambda, last_epoch=-1)
