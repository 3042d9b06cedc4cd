"""Bug: keeps a backup instead of writing atomically. Before overwriting its checkpoint in
place (torch.save straight onto last.pt), it copies the current file to last.pt.bak; a restart
that cannot load last.pt falls back to the backup. One kill in the middle of a write is
survived. But after it, the first save copies the HALF-WRITTEN last.pt over the good backup
before overwriting last.pt: a second kill in the middle of that write leaves two broken files,
and the run starts over. (Write a temporary file and os.replace it onto the real name.)"""

import os
import random
import shutil

import numpy as np
import torch


def train(setup, ckpt_dir, total_steps):
    ckpt_path = os.path.join(ckpt_dir, "last.pt")
    step = 0
    epoch = 0
    batches_done = 0
    saved_rng = None
    ckpt = None
    for p in (ckpt_path, ckpt_path + ".bak"):
        if os.path.exists(p):
            try:
                ckpt = torch.load(p, weights_only=False)
                break
            except Exception:
                ckpt = None
    if ckpt is not None:
        setup.model.load_state_dict(ckpt["model"])
        setup.optimizer.load_state_dict(ckpt["optimizer"])
        setup.scheduler.load_state_dict(ckpt["scheduler"])
        step = ckpt["step"]
        epoch = ckpt["epoch"]
        batches_done = ckpt["batches_done"]
        saved_rng = ckpt["rng"]
    while step < total_steps:
        loader = setup.make_loader(epoch)
        it = iter(loader)
        for _ in range(batches_done):
            next(it)
        if saved_rng is not None:
            torch.set_rng_state(saved_rng["torch"])
            np.random.set_state(saved_rng["numpy"])
            random.setstate(saved_rng["python"])
            saved_rng = None
        for x, y in it:
            loss = setup.loss_fn(setup.model(x), y)
            setup.optimizer.zero_grad()
            loss.backward()
            setup.optimizer.step()
            setup.scheduler.step()
            step += 1
            batches_done += 1
            setup.log(step, loss.item())
            if step % setup.checkpoint_every == 0:
                state = {
                    "model": setup.model.state_dict(),
                    "optimizer": setup.optimizer.state_dict(),
                    "scheduler": setup.scheduler.state_dict(),
                    "step": step,
                    "epoch": epoch,
                    "batches_done": batches_done,
                    "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                            "python": random.getstate()},
                }
                if os.path.exists(ckpt_path):
                    shutil.copyfile(ckpt_path, ckpt_path + ".bak")
                torch.save(state, ckpt_path)
            if step == total_steps:
                return
        epoch += 1
        batches_done = 0
