# Accepted: knows whether the optimizer stepped from a step post-hook registered for the
# duration of the call (instead of comparing scales); model.zero_grad() clears to None.
import torch


def amp_train_step(model, batch, optimizer, scaler, loss_fn, *, max_grad_norm=None,
                   scheduler=None, device_type="cpu", dtype=torch.bfloat16):
    stepped = []
    handle = optimizer.register_step_post_hook(lambda opt, args, kwargs: stepped.append(True))
    try:
        inputs, targets = batch
        model.zero_grad(set_to_none=True)
        with torch.autocast(device_type, dtype=dtype):
            output = model(inputs)
            loss = loss_fn(output, targets)
        scaler.scale(loss).backward()
        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm, foreach=False)
        scaler.step(optimizer)
        scaler.update()
    finally:
        handle.remove()
    taken = bool(stepped)
    if scheduler is not None and taken:
        scheduler.step()
    return float(loss.detach()), taken
