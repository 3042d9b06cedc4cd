"""Reference: linear warmup from 0, then a cosine decay to min_lr_ratio * base, as a
LambdaLR whose factor is a pure function of the step count (so the scheduler's own
last_epoch, which state_dict saves, is all the state there is)."""

import math

import torch


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps ({warmup_steps}) must not exceed total_steps "
                         f"({total_steps})")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError(f"min_lr_ratio must be in [0, 1], got {min_lr_ratio}")

    def factor(step):
        # step = the number of scheduler.step() calls so far (0 right after creation).
        if step < warmup_steps:
            return step / warmup_steps  # 0 at step 0: the first update uses lr = 0
        # max(1, ...): T == W has no decay phase; min(1, ...): constant after T.
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    # LambdaLR multiplies each group's own initial lr by the factor.
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
