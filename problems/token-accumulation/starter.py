"""token-accumulation: gradient accumulation for a language model, normalised over TOKENS.

Called as train_epoch(model, loader, optimizer, accum_steps, ignore_index=...) once per epoch.
"""

import torch
import torch.nn.functional as F  # F.cross_entropy(..., ignore_index=..., reduction="sum")


def train_epoch(model, loader, optimizer, accum_steps, *, ignore_index=-100):
    """Train for one pass over `loader`; return the mean token loss of each window that
    stepped.

    - `loader` yields (input_ids, labels), both LongTensor[B, L] (B and L vary);
      model(input_ids) returns logits [B, L, V]; labels[b, t] is the target of
      logits[b, t], and a label equal to `ignore_index` is not a target.
    - Consecutive micro-batches form windows of `accum_steps` (the last may be shorter).
      Each window makes exactly one optimizer.step(), equal to one step on the mean
      cross-entropy over ALL the counted tokens of the window.
    - A window without any counted token makes no step and adds nothing to the result.
    - Gradients present on the parameters when this is called must not leak in.
    """
    # 1. Group the micro-batches into windows of accum_steps.
    # 2. Count the window's tokens with labels != ignore_index (before any backward).
    # 3. Clear the gradients; forward + backward every micro-batch so that the gradients
    #    add up to those of (sum of the window's token losses) / (its counted tokens).
    # 4. optimizer.step(); record the window's mean token loss (one .item() per window).
    raise NotImplementedError("write train_epoch")
