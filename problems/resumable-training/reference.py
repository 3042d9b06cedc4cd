"""Reference: one checkpoint file, replaced atomically; resume by replaying the epoch's
loader up to the consumed batches, then restoring the RNG states."""

import os
import random

import numpy as np
import torch


def rng_state():
    """Every global RNG the run draws from: dropout (torch), augmentation (NumPy, random)."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        # NumPy's state holds an ndarray, which torch.load(weights_only=True) refuses:
        # keep the keys as a tensor and the rest as plain numbers.
        "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached),
        "random": random.getstate(),
    }


def set_rng_state(state):
    torch.set_rng_state(state["torch"])
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    random.setstate(state["random"])


def save_atomic(state, path):
    """A kill can come at any moment: write a temporary file in the same folder, make it
    durable, then swap it in. os.replace is atomic: the old or the new file, never half."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def train(setup, ckpt_dir, total_steps):
    path = os.path.join(ckpt_dir, "checkpoint.pt")
    step, epoch, done = 0, 0, 0  # steps made; the current epoch; its batches consumed
    rng = None
    if os.path.exists(path):
        ckpt = torch.load(path, weights_only=True)
        setup.model.load_state_dict(ckpt["model"])
        setup.optimizer.load_state_dict(ckpt["optimizer"])
        setup.scheduler.load_state_dict(ckpt["scheduler"])
        step, epoch, done = ckpt["step"], ckpt["epoch"], ckpt["done"]
        rng = ckpt["rng"]

    setup.model.train()
    while step < total_steps:
        batches = iter(setup.make_loader(epoch))
        # Replay the batches this epoch already consumed: the same loader gives the same
        # order only if it is iterated from its start (iter() draws a seed from the loader's
        # generator before the permutation), and loading them draws from the global RNGs...
        for _ in range(done):
            next(batches)
        # ...so the RNG states of the checkpoint are restored only now.
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
