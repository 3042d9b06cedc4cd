"""Bug: each group's factor counts its own calls in a closure instead of using the step
number LambdaLR passes in. Uninterrupted it is right (LambdaLR calls each group's factor
once at creation and once per step); state_dict() does not save it (LambdaLR saves a
function as None), so a resumed scheduler counts from 0 again and warms up a second time."""
import math

import torch


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0 or total_steps < 1 or warmup_steps > total_steps:
        raise ValueError("bad warmup_steps / total_steps")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError("bad min_lr_ratio")

    def counting_factor():
        calls = 0

        def factor(_):
            nonlocal calls
            s = calls
            calls += 1
            if s < warmup_steps:
                return s / warmup_steps
            p = min(1.0, (s - warmup_steps) / max(1, total_steps - warmup_steps))
            return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p))

        return factor

    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, [counting_factor() for _ in optimizer.param_groups])
