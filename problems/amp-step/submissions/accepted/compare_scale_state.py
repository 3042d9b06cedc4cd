# Accepted: the scale read from scaler.state_dict() before and after (a disabled scaler's
# state is empty: every step counts), optimizer.zero_grad() with its default, clipping over
# the optimizer's parameter groups.
import torch
from torch.nn.utils import clip_grad_norm_


def amp_train_step(model, batch, optimizer, scaler, loss_fn, *, max_grad_norm=None,
                   scheduler=None, device_type="cpu", dtype=torch.bfloat16):
    optimizer.zero_grad()
    x, y = batch
    with torch.autocast(device_type=device_type, dtype=dtype):
        pred = model(x)
        loss = loss_fn(pred, y)
    scaler.scale(loss).backward()
    if max_grad_norm:
        scaler.unscale_(optimizer)
        clip_grad_norm_([p for g in optimizer.param_groups for p in g["params"]], max_grad_norm)
    before = scaler.state_dict().get("scale")
    scaler.step(optimizer)
    scaler.update()
    after = scaler.state_dict().get("scale")
    skipped = before is not None and after < before
    if scheduler is not None and not skipped:
        scheduler.step()
    return loss.item(), not skipped
