"""grad-accumulation: a training epoch with gradient accumulation that equals the big batch.

Called as train_epoch(model, loader, optimizer, loss_fn, accum_steps, max_grad_norm=...,
scheduler=...) once per epoch.
"""

import torch  # torch.nn.utils.clip_grad_norm_ is what you will want


def train_epoch(model, loader, optimizer, loss_fn, accum_steps, *, max_grad_norm=None,
                scheduler=None):
    """Train for one pass over `loader` and return the mean per-sample loss of each window.

    - `loader` yields micro-batches (x, y) of possibly different sizes; len(y) is the
      number of samples. `loss_fn(model(x), y)` is the SUM of the per-sample losses.
    - Consecutive micro-batches form windows of `accum_steps` (the last may be shorter).
      Each window makes exactly one optimizer.step(), equal to one step on the mean
      per-sample loss over all the samples of the window.
    - With `max_grad_norm`, clip the window's gradient (clip_grad_norm_) before the step;
      with `scheduler`, call scheduler.step() once after each optimizer.step().
    - Returns a list of Python floats, one per optimizer step.
    """
    # 1. Group the micro-batches into windows of accum_steps (the last may be shorter).
    # 2. For each window: clear the gradients, then forward + backward every micro-batch,
    #    scaled so that the accumulated gradient is that of the window's MEAN loss.
    # 3. Clip (if asked), optimizer.step(), scheduler.step() (if given).
    # 4. Record the window's mean per-sample loss (one .item() per window).
    raise NotImplementedError("write train_epoch")
