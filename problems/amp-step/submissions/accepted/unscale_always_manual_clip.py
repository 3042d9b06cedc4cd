# Accepted: always unscales (also without clipping), decides "taken" from the unscaled
# gradients being finite (what the scaler checks too), clips by hand, clears .grad to None.
import torch


def amp_train_step(model, batch, optimizer, scaler, loss_fn, *, max_grad_norm=None,
                   scheduler=None, device_type="cpu", dtype=torch.bfloat16):
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for p in params:
        p.grad = None
    x, y = batch
    with torch.amp.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grads = [p.grad for p in params if p.grad is not None]
    finite = all(bool(torch.isfinite(g).all()) for g in grads)
    if max_grad_norm is not None and finite:
        total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        coef = max_grad_norm / (float(total) + 1e-6)
        if coef < 1.0:
            for g in grads:
                g.mul_(coef)
    scaler.step(optimizer)
    scaler.update()
    taken = finite or not scaler.is_enabled()
    if taken and scheduler:
        scheduler.step()
    return loss.item(), taken
