"""Bug: prunes old checkpoints only after a new one is renamed in; a kill between that rename and the pruning leaves 3, and the next write makes 4 checkpoints' worth."""
import glob
import os
import random
import re
import tempfile

import numpy as np
import torch


def _list(ckpt_dir):
    found = []
    for p in glob.glob(os.path.join(ckpt_dir, "step_*.pt")):
        m = re.fullmatch(r"step_(\d+)\.pt", os.path.basename(p))
        if m:
            found.append((int(m.group(1)), p))
    return sorted(found)


def train(setup, ckpt_dir, total_steps):
    # leftovers of a killed write
    for p in glob.glob(os.path.join(ckpt_dir, "*.partial")):
        os.remove(p)
    model, opt, sched = setup.model, setup.optimizer, setup.scheduler
    every = setup.checkpoint_every

    state = None
    for _, p in reversed(_list(ckpt_dir)):
        try:
            state = torch.load(p, weights_only=False)
            break
        except Exception:
            continue

    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        sched.load_state_dict(state["sched"])
        step = state["pos"]["step"]
        epoch = state["pos"]["epoch"]
        skip = state["pos"]["batch"]
    else:
        step, epoch, skip = 0, 0, 0

    def checkpoint(step, epoch, batch):
        payload = {
            "model": model.state_dict(), "optim": opt.state_dict(),
            "sched": sched.state_dict(),
            "pos": {"step": step, "epoch": epoch, "batch": batch},
            "torch_rng": torch.get_rng_state(), "py_rng": random.getstate(),
            "np_rng": np.random.get_state(),
        }
        fd, tmp = tempfile.mkstemp(dir=ckpt_dir, suffix=".partial")
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(ckpt_dir, f"step_{step:08d}.pt"))
        for _, old in _list(ckpt_dir)[:-2]:
            os.remove(old)

    while step < total_steps:
        loader = setup.make_loader(epoch)
        it = iter(loader)
        batch_idx = 0
        while batch_idx < skip:
            next(it)
            batch_idx += 1
        if state is not None:
            torch.set_rng_state(state["torch_rng"])
            random.setstate(state["py_rng"])
            np.random.set_state(state["np_rng"])
            state = None
        skip = 0
        for x, y in it:
            out = model(x)
            loss = setup.loss_fn(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            batch_idx += 1
            setup.log(step, loss.item())
            if step % every == 0 or step == total_steps:
                checkpoint(step, epoch, batch_idx)
            if step == total_steps:
                return
        epoch += 1
