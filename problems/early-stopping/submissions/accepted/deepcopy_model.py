# Accepted: keeps a deepcopy of the whole model (on its device); `best` is a property over
# an internal score that starts at +inf; torch.isfinite for the check; a state loaded from
# a state_dict keeps the weights as a dict until restore.
import copy

import torch


class EarlyStopping:
    def __init__(self, patience, *, min_delta=0.0, mode="min"):
        if mode == "min":
            self._factor = 1.0
        elif mode == "max":
            self._factor = -1.0
        else:
            raise ValueError(mode)
        if patience < 0:
            raise ValueError(patience)
        if min_delta < 0:
            raise ValueError(min_delta)
        self.patience = patience
        self.min_delta = min_delta
        self._score = float("inf")  # lower is better, metric * factor
        self.best_step = None
        self.calls = 0
        self.bad = 0
        self._model_copy = None
        self._weights = None

    @property
    def best(self):
        return None if self.best_step is None else self._score * self._factor

    def step(self, metric, model):
        self.calls += 1
        score = metric * self._factor
        finite = bool(torch.isfinite(torch.tensor(metric, dtype=torch.float64)))
        if finite and (self.best_step is None or score < self._score - self.min_delta):
            self._score = score
            self.best_step = self.calls
            self.bad = 0
            self._model_copy = copy.deepcopy(model)
            self._weights = None
            return False
        self.bad += 1
        return self.bad >= self.patience

    def _best_weights(self):
        if self._model_copy is not None:
            return self._model_copy.state_dict()
        return self._weights

    def restore(self, model):
        model.load_state_dict(self._best_weights())

    def state_dict(self):
        weights = self._best_weights()
        return {"score": self._score, "best_step": self.best_step, "calls": self.calls,
                "bad": self.bad,
                "weights": None if weights is None else {k: v.clone() for k, v in weights.items()}}

    def load_state_dict(self, state):
        self._score = state["score"]
        self.best_step = state["best_step"]
        self.calls = state["calls"]
        self.bad = state["bad"]
        self._model_copy = None
        self._weights = state["weights"]
