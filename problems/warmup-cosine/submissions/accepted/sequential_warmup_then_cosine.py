# Accepted: SequentialLR chaining a linear warmup and a cosine decay, each a LambdaLR of its
# own step count; SequentialLR switches at the milestone W and saves both in its state_dict.
import math

from torch.optim.lr_scheduler import LambdaLR, SequentialLR


def make_scheduler(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    if warmup_steps < 0 or total_steps < 1 or warmup_steps > total_steps:
        raise ValueError("bad warmup_steps / total_steps")
    if min_lr_ratio < 0 or min_lr_ratio > 1:
        raise ValueError("bad min_lr_ratio")
    decay_steps = max(1, total_steps - warmup_steps)

    def cosine(k):  # k: steps since the end of the warmup
        p = min(1.0, k / decay_steps)
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p))

    if warmup_steps == 0:
        return LambdaLR(optimizer, cosine)
    warmup = LambdaLR(optimizer, lambda k: k / warmup_steps)
    decay = LambdaLR(optimizer, cosine)
    return SequentialLR(optimizer, [warmup, decay], milestones=[warmup_steps])
