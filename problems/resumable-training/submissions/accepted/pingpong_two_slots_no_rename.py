"""Two fixed slots (slot0.pt / slot1.pt) overwritten alternately with no rename; resumes from the loadable slot with the larger step."""
import os
import random

import numpy as np
import torch


def _load_best(ckpt_dir):
    best = None
    for name in ("slot0.pt", "slot1.pt"):
        p = os.path.join(ckpt_dir, name)
        if not os.path.exists(p):
            continue
        try:
            ck = torch.load(p, weights_only=False)
        except Exception:
            continue  # a half-written slot
        if best is None or ck["step"] > best["step"]:
            best = ck
    return best


def train(setup, ckpt_dir, total_steps):
    ck = _load_best(ckpt_dir)
    if ck is None:
        step, epoch, pos, slot = 0, 0, 0, 0
    else:
        setup.model.load_state_dict(ck["model"])
        setup.optimizer.load_state_dict(ck["opt"])
        setup.scheduler.load_state_dict(ck["sched"])
        step, epoch, pos = ck["step"], ck["epoch"], ck["pos"]
        slot = 1 - ck["slot"]  # overwrite the older one next

    def save():
        nonlocal slot
        state = {"model": setup.model.state_dict(), "opt": setup.optimizer.state_dict(),
                 "sched": setup.scheduler.state_dict(), "step": step, "epoch": epoch,
                 "pos": pos, "slot": slot,
                 "rng": (torch.get_rng_state(), random.getstate(), np.random.get_state())}
        with open(os.path.join(ckpt_dir, f"slot{slot}.pt"), "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        slot = 1 - slot

    while step < total_steps:
        it = iter(setup.make_loader(epoch))
        for _ in range(pos):
            next(it)
        if ck is not None:
            t, r, n = ck["rng"]
            torch.set_rng_state(t)
            random.setstate(r)
            np.random.set_state(n)
            ck = None
        for x, y in it:
            loss = setup.loss_fn(setup.model(x), y)
            setup.optimizer.zero_grad()
            loss.backward()
            setup.optimizer.step()
            setup.scheduler.step()
            step += 1
            pos += 1
            setup.log(step, loss.item())
            if step % setup.checkpoint_every == 0 or step == total_steps:
                save()
            if step == total_steps:
                return
        epoch, pos = epoch + 1, 0
