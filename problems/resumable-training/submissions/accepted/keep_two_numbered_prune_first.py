"""Keeps the last two step-numbered checkpoints, written straight to their final names with
torch.save (no temporary file, no rename): a kill in the middle leaves the newest file
half-written, and the restart resumes from the newest one that loads. Old checkpoints are
deleted BEFORE the next one is written, never after it, so the folder holds at most two
complete checkpoints plus the one being written, whenever the kill comes. The position is
derived from the step (every epoch has the same number of batches); RNG states are stored as
tensors and lists, loaded with weights_only=True."""

import itertools
import random
from pathlib import Path

import numpy as np
import torch

KEEP = 2


def numbered(folder: Path) -> list[tuple[int, Path]]:
    """(step, path) of every checkpoint file, oldest first."""
    found = []
    for path in folder.glob("step-*.ckpt"):
        digits = path.stem[len("step-"):]
        if digits.isdigit():
            found.append((int(digits), path))
    return sorted(found)


def newest_loadable(folder: Path):
    for _, path in reversed(numbered(folder)):
        try:
            return torch.load(path, weights_only=True)
        except Exception:  # cut short by a kill: the one before is complete
            continue
    return None


def make_room(folder: Path, step: int) -> None:
    """Before writing checkpoint ``step``: keep the newest KEEP checkpoints older than it.
    Files of ``step`` or later are what a kill left half-written after the checkpoint this
    process resumed from (the one of ``step`` is about to be rewritten anyway)."""
    older = [path for s, path in numbered(folder) if s < step]
    doomed = older[:-KEEP] + [path for s, path in numbered(folder) if s >= step]
    for path in doomed:
        path.unlink(missing_ok=True)


def capture_rng():
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"torch": torch.get_rng_state(),
            "numpy": [kind, torch.tensor(keys.astype(np.int64)), pos, has_gauss, gauss],
            "random": list(random.getstate())}


def restore_rng(saved):
    torch.set_rng_state(saved["torch"])
    kind, keys, pos, has_gauss, gauss = saved["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, cached = saved["random"]
    random.setstate((version, tuple(internal), cached))


def train(setup, ckpt_dir, total_steps):
    folder = Path(ckpt_dir)
    per_epoch = len(setup.make_loader(0))
    state = newest_loadable(folder)
    step = 0
    if state is not None:
        setup.model.load_state_dict(state["model"])
        setup.optimizer.load_state_dict(state["optimizer"])
        setup.scheduler.load_state_dict(state["scheduler"])
        step = int(state["step"])

    while step < total_steps:
        epoch, consumed = divmod(step, per_epoch)
        batches = iter(setup.make_loader(epoch))
        # iterate past the consumed batches first (loading them draws random numbers)...
        next(itertools.islice(batches, consumed, consumed), None)
        if state is not None:  # ...and only then put the saved RNG states back
            restore_rng(state["rng"])
            state = None
        for x, y in batches:
            loss = setup.loss_fn(setup.model(x), y)
            setup.optimizer.zero_grad()
            loss.backward()
            setup.optimizer.step()
            setup.scheduler.step()
            step += 1
            setup.log(step, loss.item())
            if step % setup.checkpoint_every == 0 or step == total_steps:
                make_room(folder, step)
                torch.save({"model": setup.model.state_dict(),
                            "optimizer": setup.optimizer.state_dict(),
                            "scheduler": setup.scheduler.state_dict(),
                            "step": step, "rng": capture_rng()},
                           folder / f"step-{step:08d}.ckpt")
            if step == total_steps:
                return
