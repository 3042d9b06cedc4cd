# Wrong: unscales, then calls optimizer.step() itself: it steps on inf / NaN gradients,
# which scaler.step(optimizer) would have skipped.
import torch


def amp_train_step(model, batch, optimizer, scaler, loss_fn, *, max_grad_norm=None,
                   scheduler=None, device_type="cpu", dtype=torch.bfloat16):
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scale = scaler.get_scale()
    optimizer.step()
    scaler.update()
    taken = scaler.get_scale() >= scale
    if taken and scheduler is not None:
        scheduler.step()
    return loss.item(), taken
