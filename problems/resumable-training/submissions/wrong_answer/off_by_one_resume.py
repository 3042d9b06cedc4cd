"""Counts steps with range(start, total_steps + 1) but resumes with start = the saved step,
which was already made: after a restart every step is logged under the number of the one
before, and the run makes one step too many."""

import os
import random

import numpy as np
import torch


def train(setup, ckpt_dir, total_steps):
    path = os.path.join(ckpt_dir, "state.pt")
    start, epoch, used = 1, 0, 0
    if os.path.exists(path):
        ck = torch.load(path, weights_only=False)
        setup.model.load_state_dict(ck["model"])
        setup.optimizer.load_state_dict(ck["optimizer"])
        setup.scheduler.load_state_dict(ck["scheduler"])
        start, epoch, used = ck["step"], ck["epoch"], ck["used"]
    else:
        ck = None

    batches = iter(setup.make_loader(epoch))
    for _ in range(used):
        next(batches)
    if ck is not None:
        torch.set_rng_state(ck["torch_rng"])
        np.random.set_state(ck["numpy_rng"])
        random.setstate(ck["python_rng"])

    for step in range(start, total_steps + 1):
        try:
            x, y = next(batches)
        except StopIteration:
            epoch, used = epoch + 1, 0
            batches = iter(setup.make_loader(epoch))
            x, y = next(batches)
        used += 1
        loss = setup.loss_fn(setup.model(x), y)
        setup.optimizer.zero_grad()
        loss.backward()
        setup.optimizer.step()
        setup.scheduler.step()
        setup.log(step, loss.item())
        if step % setup.checkpoint_every == 0 or step == total_steps:
            tmp = path + ".tmp"
            torch.save({"model": setup.model.state_dict(),
                        "optimizer": setup.optimizer.state_dict(),
                        "scheduler": setup.scheduler.state_dict(),
                        "step": step, "epoch": epoch, "used": used,
                        "torch_rng": torch.get_rng_state(),
                        "numpy_rng": np.random.get_state(),
                        "python_rng": random.getstate()}, tmp)
            os.replace(tmp, path)
