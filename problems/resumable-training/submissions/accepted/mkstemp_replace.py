"""torch.save to a temporary path made by tempfile.mkstemp in ckpt_dir, then os.replace;
skip consumed batches with itertools.islice; RNG states as plain lists."""

import itertools
import os
import random
import tempfile

import numpy as np
import torch

NAME = "last.ckpt"


def capture_rng():
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"torch": torch.get_rng_state(), "python": random.getstate(),
            "numpy": [name, keys.tolist(), pos, has_gauss, gauss]}


def restore_rng(rng):
    torch.set_rng_state(rng["torch"])
    random.setstate(rng["python"])
    name, keys, pos, has_gauss, gauss = rng["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, gauss))


def save(state, ckpt_dir):
    fd, tmp = tempfile.mkstemp(dir=ckpt_dir, prefix="partial-", suffix=".tmp")
    os.close(fd)
    try:
        torch.save(state, tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(ckpt_dir, NAME))
    except BaseException:
        os.remove(tmp)
        raise


def train(setup, ckpt_dir, total_steps):
    # a kill may have left a partial temporary file behind
    for leftover in os.listdir(ckpt_dir):
        if leftover.startswith("partial-"):
            os.remove(os.path.join(ckpt_dir, leftover))

    state = {"step": 0, "epoch": 0, "seen": 0}
    rng = None
    path = os.path.join(ckpt_dir, NAME)
    if os.path.isfile(path):
        saved = torch.load(path, weights_only=True)
        setup.model.load_state_dict(saved["model"])
        setup.optimizer.load_state_dict(saved["optimizer"])
        setup.scheduler.load_state_dict(saved["scheduler"])
        state = saved["position"]
        rng = saved["rng"]

    while state["step"] < total_steps:
        batches = iter(setup.make_loader(state["epoch"]))
        # consume the batches this epoch already used (their loading draws random numbers
        # too), and only then put the RNG states back
        for _ in itertools.islice(batches, state["seen"]):
            pass
        if rng is not None:
            restore_rng(rng)
            rng = None
        for x, y in batches:
            loss = setup.loss_fn(setup.model(x), y)
            setup.optimizer.zero_grad()
            loss.backward()
            setup.optimizer.step()
            setup.scheduler.step()
            state["step"] += 1
            state["seen"] += 1
            setup.log(state["step"], loss.item())
            if state["step"] % setup.checkpoint_every == 0 or state["step"] == total_steps:
                save({"model": setup.model.state_dict(),
                      "optimizer": setup.optimizer.state_dict(),
                      "scheduler": setup.scheduler.state_dict(),
                      "position": dict(state), "rng": capture_rng()}, ckpt_dir)
            if state["step"] == total_steps:
                return
        state["epoch"] += 1
        state["seen"] = 0
