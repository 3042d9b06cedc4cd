"""Reference: early stopping that keeps a real copy of the best weights."""

import math


class EarlyStopping:
    def __init__(self, patience, *, min_delta=0.0, mode="min"):
        if patience < 0:
            raise ValueError(f"patience must be >= 0, got {patience}")
        if min_delta < 0:
            raise ValueError(f"min_delta must be >= 0, got {min_delta}")
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        self.patience, self.min_delta, self.mode = patience, min_delta, mode
        self.best = None  # the best metric so far (a float), None before the first finite one
        self.best_step = None  # the 1-based call of step() that saw it
        self.steps = 0  # calls of step() so far
        self.bad_steps = 0  # consecutive calls without improvement
        self.best_weights = None  # name -> a CPU copy of every parameter and buffer

    def _improves(self, metric):
        if not math.isfinite(metric):  # NaN and +-inf never improve (NaN compares False)
            return False
        if self.best is None:
            return True
        if self.mode == "min":
            return metric < self.best - self.min_delta
        return metric > self.best + self.min_delta

    def step(self, metric, model):
        metric = float(metric)
        self.steps += 1
        if self._improves(metric):
            self.best, self.best_step, self.bad_steps = metric, self.steps, 0
            # model.state_dict() holds the LIVE tensors: the optimizer's in-place updates
            # would change a kept reference. detach().clone() makes a copy (on the CPU here,
            # which also spares GPU memory); buffers (BatchNorm statistics) come with it.
            self.best_weights = {name: t.detach().to("cpu", copy=True)
                                 for name, t in model.state_dict().items()}
            return False
        self.bad_steps += 1
        return self.bad_steps >= self.patience

    def restore(self, model):
        # load_state_dict copies into the model's own tensors in place (the parameter
        # objects stay, so the optimizer keeps driving them) and onto their device.
        model.load_state_dict(self.best_weights)

    def state_dict(self):
        return {"best": self.best, "best_step": self.best_step, "steps": self.steps,
                "bad_steps": self.bad_steps, "best_weights": self.best_weights}

    def load_state_dict(self, state):
        self.best, self.best_step = state["best"], state["best_step"]
        self.steps, self.bad_steps = state["steps"], state["bad_steps"]
        self.best_weights = state["best_weights"]

