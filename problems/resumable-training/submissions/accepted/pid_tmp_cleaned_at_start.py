"""Accepted: each process writes its checkpoints through a temporary file named after its
pid, then os.replace()s it onto the checkpoint; a kill in the middle of a write leaves
that file behind, and the next process deletes such leftovers when it starts."""

import glob
import os
import random

import numpy as np
import torch


def rng_state():
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"torch": torch.get_rng_state(), "random": random.getstate(),
            "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached)}


def set_rng_state(state):
    torch.set_rng_state(state["torch"])
    random.setstate(state["random"])
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))


def save_atomic(state, path):
    tmp = f"{path}.{os.getpid()}.tmp"  # no two processes ever write the same file
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def train(setup, ckpt_dir, total_steps):
    path = os.path.join(ckpt_dir, "checkpoint.pt")
    for leftover in glob.glob(path + ".*.tmp"):  # half-written by a killed process
        os.remove(leftover)
    step = epoch = done = 0
    rng = None
    if os.path.exists(path):
        ckpt = torch.load(path, weights_only=True)
        setup.model.load_state_dict(ckpt["model"])
        setup.optimizer.load_state_dict(ckpt["optimizer"])
        setup.scheduler.load_state_dict(ckpt["scheduler"])
        step, epoch, done, rng = ckpt["step"], ckpt["epoch"], ckpt["done"], ckpt["rng"]

    setup.model.train()
    while step < total_steps:
        batches = iter(setup.make_loader(epoch))
        for _ in range(done):
            next(batches)
        if rng is not None:
            set_rng_state(rng)
            rng = None
        for x, y in batches:
            loss = setup.loss_fn(setup.model(x), y)
            setup.optimizer.zero_grad()
            loss.backward()
            setup.optimizer.step()
            setup.scheduler.step()
            step += 1
            done += 1
            setup.log(step, loss.item())
            if step % setup.checkpoint_every == 0 or step == total_steps:
                save_atomic({"model": setup.model.state_dict(),
                             "optimizer": setup.optimizer.state_dict(),
                             "scheduler": setup.scheduler.state_dict(),
                             "step": step, "epoch": epoch, "done": done,
                             "rng": rng_state()}, path)
            if step == total_steps:
                break
        else:
            epoch, done = epoch + 1, 0
