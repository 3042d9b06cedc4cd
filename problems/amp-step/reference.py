"""Reference: one mixed-precision training step with a GradScaler."""

import torch


def amp_train_step(model, batch, optimizer, scaler, loss_fn, *, max_grad_norm=None,
                   scheduler=None, device_type="cpu", dtype=torch.bfloat16):
    x, y = batch
    # Before the backward: None, not zeros, so a parameter this step does not reach keeps
    # no gradient (and momentum / weight decay leave it alone).
    optimizer.zero_grad(set_to_none=True)
    # Only the forward and the loss run under autocast; the backward follows the dtypes
    # the forward chose.
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(model(x), y)
    # The scaled loss keeps small half-precision gradients from flushing to zero.
    scaler.scale(loss).backward()
    if max_grad_norm is not None:
        # The gradients are still multiplied by the scale: unscale them first, or the
        # clip compares max_grad_norm with a norm thousands of times too large.
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scale = scaler.get_scale()
    # scaler.step skips optimizer.step() when the gradients hold inf or NaN; update()
    # then lowers the scale (or raises it after growth_interval clean steps).
    scaler.step(optimizer)
    scaler.update()
    # A skipped step lowers the scale, a taken one never does (a disabled scaler's scale
    # is always 1.0: every step is taken).
    taken = scaler.get_scale() >= scale
    if taken and scheduler is not None:
        scheduler.step()  # the schedule counts the steps the optimizer really took
    return loss.item(), taken
