"""Bug: after loading a checkpoint the model is put in eval mode (as code that loads a
model for inference does) and never back in training mode: the resumed run trains with
dropout off. Everything is saved and restored right."""

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
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(setup, path):
    ckpt = torch.load(path, weights_only=True)
    setup.model.load_state_dict(ckpt["model"])
    setup.model.eval()
    setup.optimizer.load_state_dict(ckpt["optimizer"])
    setup.scheduler.load_state_dict(ckpt["scheduler"])
    return ckpt


def train(setup, ckpt_dir, total_steps):
    path = os.path.join(ckpt_dir, "checkpoint.pt")
    step = epoch = done = 0
    rng = None
    if os.path.exists(path):
        ckpt = load(setup, path)
        step, epoch, done, rng = ckpt["step"], ckpt["epoch"], ckpt["done"], ckpt["rng"]

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
