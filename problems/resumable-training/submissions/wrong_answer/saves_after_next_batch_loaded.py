"""Bug: saves the checkpoint at the top of the next iteration (the next batch is already loaded, so the saved RNG states are one batch late)."""
import os
import random

import numpy as np
import torch


def _rng_state():
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"torch": torch.get_rng_state(), "random": random.getstate(),
            "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached)}


def _set_rng_state(state):
    torch.set_rng_state(state["torch"])
    random.setstate(state["random"])
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))


def _save(state, path):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def train(setup, ckpt_dir, total_steps):
    path = os.path.join(ckpt_dir, "ckpt.pt")
    step, epoch, consumed, rng = 0, 0, 0, None
    if os.path.exists(path):
        ck = torch.load(path)
        setup.model.load_state_dict(ck["model"])
        setup.optimizer.load_state_dict(ck["optimizer"])
        setup.scheduler.load_state_dict(ck["scheduler"])
        step, epoch, consumed, rng = ck["step"], ck["epoch"], ck["consumed"], ck["rng"]

    def save():
        _save({"model": setup.model.state_dict(), "optimizer": setup.optimizer.state_dict(),
               "scheduler": setup.scheduler.state_dict(), "step": step, "epoch": epoch,
               "consumed": consumed, "rng": _rng_state()}, path)

    saved_at = step
    while step < total_steps:
        batches = iter(setup.make_loader(epoch))
        for _ in range(consumed):
            next(batches)
        if rng is not None:
            _set_rng_state(rng)
            rng = None
        for x, y in batches:
            if step > 0 and step % setup.checkpoint_every == 0 and step != saved_at:
                save()
                saved_at = step
            loss = setup.loss_fn(setup.model(x), y)
            setup.optimizer.zero_grad()
            loss.backward()
            setup.optimizer.step()
            setup.scheduler.step()
            step += 1
            consumed += 1
            setup.log(step, loss.item())
            if step == total_steps:
                save()
            if step >= total_steps:
                break
        else:
            epoch += 1
            consumed = 0
