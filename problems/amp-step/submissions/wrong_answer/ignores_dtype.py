# Wrong: always autocasts to bfloat16, whatever dtype it is given.
import torch


def amp_train_step(model, batch, optimizer, scaler, loss_fn, *, max_grad_norm=None,
                   scheduler=None, device_type="cpu", dtype=torch.bfloat16):
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
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
