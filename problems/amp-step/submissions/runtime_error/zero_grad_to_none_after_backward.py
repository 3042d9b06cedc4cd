# Runtime error: clears the gradients (to None, zero_grad's default) after the backward, so
# scaler.step finds no gradient to check and raises "No inf checks were recorded for this
# optimizer." The judge adds a hint to that message.
import torch


def amp_train_step(model, batch, optimizer, scaler, loss_fn, *, max_grad_norm=None,
                   scheduler=None, device_type="cpu", dtype=torch.bfloat16):
    x, y = batch
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    optimizer.zero_grad()
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scale = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    taken = scaler.get_scale() >= scale
    if taken and scheduler is not None:
        scheduler.step()
    return loss.item(), taken
