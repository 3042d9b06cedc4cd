"""Each checkpoint is a folder (written as NAME.tmp/, then renamed); NumPy state as its dict form with list keys; skips batches with islice."""
import collections
import itertools
import os
import random
import shutil

import numpy as np
import torch

PREFIX = "ck-"


def _np_state():
    st = np.random.get_state(legacy=False)
    return {"bit_generator": st["bit_generator"],
            "key": st["state"]["key"].tolist(), "pos": int(st["state"]["pos"]),
            "has_gauss": int(st["has_gauss"]), "gauss": float(st["gauss"])}


def _np_restore(d):
    np.random.set_state({"bit_generator": d["bit_generator"],
                         "state": {"key": np.array(d["key"], dtype=np.uint32), "pos": d["pos"]},
                         "has_gauss": d["has_gauss"], "gauss": d["gauss"]})


def _complete(ckpt_dir):
    out = []
    for name in os.listdir(ckpt_dir):
        if name.startswith(PREFIX) and not name.endswith(".tmp"):
            out.append((int(name[len(PREFIX):]), os.path.join(ckpt_dir, name)))
    return sorted(out)


def _write(ckpt_dir, step, state):
    final = os.path.join(ckpt_dir, f"{PREFIX}{step}")
    tmp = final + ".tmp"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.mkdir(tmp)
    torch.save(state, os.path.join(tmp, "state.pt"))
    fd = os.open(os.path.join(tmp, "state.pt"), os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    os.rename(tmp, final)
    for s, p in _complete(ckpt_dir):
        if s != step:
            shutil.rmtree(p)


def train(setup, ckpt_dir, total_steps):
    for name in os.listdir(ckpt_dir):
        if name.endswith(".tmp"):
            shutil.rmtree(os.path.join(ckpt_dir, name), ignore_errors=True)

    done, epoch, consumed, rng = 0, 0, 0, None
    existing = _complete(ckpt_dir)
    if existing:
        ck = torch.load(os.path.join(existing[-1][1], "state.pt"))
        setup.model.load_state_dict(ck["model"])
        setup.optimizer.load_state_dict(ck["optimizer"])
        setup.scheduler.load_state_dict(ck["scheduler"])
        done, epoch, consumed = ck["done"], ck["epoch"], ck["consumed"]
        rng = ck["rng"]

    last_saved = done
    while done < total_steps:
        batches = iter(setup.make_loader(epoch))
        collections.deque(itertools.islice(batches, consumed), maxlen=0)  # skip, eagerly
        if rng is not None:
            torch.set_rng_state(rng["torch"])
            random.setstate(tuple(rng["python"]))
            _np_restore(rng["numpy"])
            rng = None
        for x, y in batches:
            loss = setup.loss_fn(setup.model(x), y)
            setup.optimizer.zero_grad(set_to_none=False)
            loss.backward()
            setup.optimizer.step()
            setup.scheduler.step()
            done += 1
            consumed += 1
            setup.log(done, loss.item())
            if done - last_saved >= setup.checkpoint_every or done == total_steps:
                _write(ckpt_dir, done, {
                    "model": setup.model.state_dict(),
                    "optimizer": setup.optimizer.state_dict(),
                    "scheduler": setup.scheduler.state_dict(),
                    "done": done, "epoch": epoch, "consumed": consumed,
                    "rng": {"torch": torch.get_rng_state(), "python": list(random.getstate()),
                            "numpy": _np_state()}})
                last_saved = done
            if done == total_steps:
                break
        else:
            epoch += 1
            consumed = 0
