"""amp-step: one mixed-precision training step with a GradScaler.

Called as amp_train_step(model, (x, y), optimizer, scaler, loss_fn, max_grad_norm=...,
scheduler=..., device_type=..., dtype=...) once per batch; `scaler` is a
torch.amp.GradScaler made by the caller for device_type.
"""

import torch


def amp_train_step(model, batch, optimizer, scaler, loss_fn, *, max_grad_norm=None,
                   scheduler=None, device_type="cpu", dtype=torch.bfloat16):
    """Return (loss.item(), taken): taken is False when the scaler skipped the step.

    - Clear the gradients (set_to_none=True) before the backward.
    - Forward and loss under torch.autocast(device_type, dtype); backward on
      scaler.scale(loss).
    - With max_grad_norm: scaler.unscale_(optimizer) FIRST, then clip the total norm.
    - scaler.step(optimizer) (never optimizer.step()), then scaler.update().
    - scheduler.step() only after a step that was taken (the scale did not go down).
    """
    raise NotImplementedError("write amp_train_step")
