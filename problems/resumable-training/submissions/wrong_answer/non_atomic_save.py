"""Saves straight onto ckpt.pt: a kill in the middle of torch.save leaves a truncated file
that the restart cannot load."""

import os
import random

import numpy as np
import torch


def get_rng():
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
            "random": random.getstate()}


def set_rng(rng):
    torch.set_rng_state(rng["torch"])
    np.random.set_state(rng["numpy"])
    random.setstate(rng["random"])


def save(state, path):
    torch.save(state, path)


def train(setup, ckpt_dir, total_steps):
    path = os.path.join(ckpt_dir, "ckpt.pt")
    step = epoch = skip = 0
    ckpt = None
    if os.path.exists(path):
        ckpt = torch.load(path, weights_only=False)
        setup.model.load_state_dict(ckpt["model"])
        setup.optimizer.load_state_dict(ckpt["optimizer"])
        setup.scheduler.load_state_dict(ckpt["scheduler"])
        step, epoch, skip = ckpt["step"], ckpt["epoch"], ckpt["skip"]

    while step < total_steps:
        batches = iter(setup.make_loader(epoch))
        for _ in range(skip):
            next(batches)
        if ckpt is not None:
            set_rng(ckpt["rng"])
            ckpt = None
        for x, y in batches:
            loss = setup.loss_fn(setup.model(x), y)
            setup.optimizer.zero_grad()
            loss.backward()
            setup.optimizer.step()
            setup.scheduler.step()
            step += 1
            skip += 1
            setup.log(step, loss.item())
            if step % setup.checkpoint_every == 0 or step == total_steps:
                save({"model": setup.model.state_dict(),
                      "optimizer": setup.optimizer.state_dict(),
                      "scheduler": setup.scheduler.state_dict(),
                      "step": step, "epoch": epoch, "skip": skip, "rng": get_rng()}, path)
            if step == total_steps:
                return
        epoch += 1
        skip = 0
