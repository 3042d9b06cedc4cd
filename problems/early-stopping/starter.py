"""early-stopping: stop when the validation metric stops improving, and keep the best weights.

Used as:

    stopper = EarlyStopping(patience=3, min_delta=0.0, mode="min")
    for epoch in range(max_epochs):
        train_one_epoch(model, optimizer)
        if stopper.step(validate(model), model):
            break
    stopper.restore(model)           # back to the weights of the best epoch
"""

import math  # math.isfinite tells a real metric from NaN / inf


class EarlyStopping:
    def __init__(self, patience, *, min_delta=0.0, mode="min"):
        # ValueError for patience < 0, min_delta < 0, or a mode other than "min" / "max".
        self.best = None  # the best metric so far (a float); None before the first finite one
        self.best_step = None  # which call of step() (1-based) saw it
        raise NotImplementedError("write __init__")

    def step(self, metric, model):
        """Record `metric` (a float) for the current weights of `model`; return True when
        it is time to stop (patience calls in a row without improvement)."""
        # An improvement: metric < best - min_delta ("min") / metric > best + min_delta
        # ("max"); the first finite metric always is one; NaN and +-inf never are.
        # On an improvement keep a COPY of every parameter and buffer: model.state_dict()'s
        # tensors are the live parameters, which the optimizer keeps changing in place.
        raise NotImplementedError("write step")

    def restore(self, model):
        """Copy the best weights back into the model's own tensors, in place."""
        raise NotImplementedError("write restore")

    def state_dict(self):
        """The counters and the best weights: tensors, numbers, None, lists, dicts."""
        raise NotImplementedError("write state_dict")

    def load_state_dict(self, state):
        raise NotImplementedError("write load_state_dict")

