# Accepted: copy.deepcopy(model.state_dict()) kept on the model's device, a `wait` counter,
# math.isnan / math.isinf instead of math.isfinite, restore with load_state_dict.
import copy
import math


class EarlyStopping:
    def __init__(self, patience, *, min_delta=0.0, mode="min"):
        if patience < 0 or min_delta < 0:
            raise ValueError("patience and min_delta must be non-negative")
        if mode not in {"min", "max"}:
            raise ValueError(f"unknown mode {mode}")
        self.patience = patience
        self.min_delta = min_delta
        self.mode = mode
        self.best = None
        self.best_step = None
        self.num_calls = 0
        self.wait = 0
        self.best_state = None

    def is_better(self, metric):
        if math.isnan(metric) or math.isinf(metric):
            return False
        if self.best is None:
            return True
        if self.mode == "min":
            return metric < self.best - self.min_delta
        return metric > self.best + self.min_delta

    def step(self, metric, model):
        self.num_calls += 1
        if self.is_better(metric):
            self.best = metric
            self.best_step = self.num_calls
            self.wait = 0
            self.best_state = copy.deepcopy(model.state_dict())
            return False
        self.wait += 1
        return self.wait >= self.patience

    def restore(self, model):
        model.load_state_dict(self.best_state)

    def state_dict(self):
        return {
            "best": self.best,
            "best_step": self.best_step,
            "num_calls": self.num_calls,
            "wait": self.wait,
            "best_state": self.best_state,
        }

    def load_state_dict(self, state):
        for key, value in state.items():
            setattr(self, key, value)
