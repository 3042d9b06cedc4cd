"""Bug: keeps the last two step-numbered checkpoints, but deletes the older ones only AFTER
saving the new one. A kill between that save and the pruning leaves three checkpoints; the
restart writes a fourth before it prunes again: four checkpoints' worth in ckpt_dir (the
limit is three). (Writing straight to the final name is fine here: a half-written newest file
does not load, and the restart falls back to the one before.)"""

import glob
import os
import random

import numpy as np
import torch


def checkpoints(ckpt_dir):
    """(step, path) of every checkpoint file, newest first."""
    found = []
    for path in glob.glob(os.path.join(ckpt_dir, "step-*.pt")):
        found.append((int(os.path.basename(path)[5:-3]), path))
    return sorted(found, reverse=True)


def load_newest(ckpt_dir):
    for _, path in checkpoints(ckpt_dir):
        try:
            return torch.load(path, weights_only=False)
        except Exception:  # half-written by a kill: fall back to the one before
            continue
    return None


def train(setup, ckpt_dir, total_steps):
    model, opt, sched = setup.model, setup.optimizer, setup.scheduler
    steps_per_epoch = len(setup.make_loader(0))
    step = 0
    ckpt = load_newest(ckpt_dir)
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        sched.load_state_dict(ckpt["sched"])
        step = ckpt["step"]

    while step < total_steps:
        # every epoch has the same number of batches: the position follows from the step
        epoch, skip = divmod(step, steps_per_epoch)
        it = iter(setup.make_loader(epoch))
        for _ in range(skip):
            next(it)
        if ckpt is not None:
            torch.set_rng_state(ckpt["torch_rng"])
            np.random.set_state(ckpt["np_rng"])
            random.setstate(ckpt["py_rng"])
            ckpt = None
        for x, y in it:
            out = model(x)
            loss = setup.loss_fn(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            setup.log(step, loss.item())
            if step % setup.checkpoint_every == 0 or step == total_steps:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                            "sched": sched.state_dict(), "step": step,
                            "torch_rng": torch.get_rng_state(),
                            "np_rng": np.random.get_state(), "py_rng": random.getstate()},
                           os.path.join(ckpt_dir, f"step-{step:07d}.pt"))
                for _, old in checkpoints(ckpt_dir)[2:]:
                    os.remove(old)
            if step == total_steps:
                break
