# Accepted: {k: v.detach().clone()} on the model's device, one comparison for both modes
# (negated metrics in "max" mode), restore with p.copy_ over named parameters and buffers.
import math

import torch


class EarlyStopping:
    def __init__(self, patience: int, *, min_delta: float = 0.0, mode: str = "min"):
        if not patience >= 0:
            raise ValueError("patience must be >= 0")
        if not min_delta >= 0:
            raise ValueError("min_delta must be >= 0")
        if mode not in ("min", "max"):
            raise ValueError("mode must be 'min' or 'max'")
        self.patience, self.min_delta = patience, min_delta
        self.sign = 1.0 if mode == "min" else -1.0
        self.best = None
        self.best_step = None
        self._calls = 0
        self._since_best = 0
        self._weights = {}

    def step(self, metric, model) -> bool:
        self._calls += 1
        m = float(metric)
        if math.isfinite(m) and (self.best is None
                                 or self.sign * m < self.sign * self.best - self.min_delta):
            self.best, self.best_step, self._since_best = m, self._calls, 0
            self._weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
            return False
        self._since_best += 1
        return self._since_best >= self.patience

    @torch.no_grad()
    def restore(self, model) -> None:
        tensors = dict(model.named_parameters())
        tensors.update(model.named_buffers())
        for name, value in self._weights.items():
            tensors[name].copy_(value)

    def state_dict(self) -> dict:
        return {"counters": [self._calls, self._since_best],
                "best": self.best, "best_step": self.best_step,
                "weights": dict(self._weights)}

    def load_state_dict(self, state: dict) -> None:
        self._calls, self._since_best = state["counters"]
        self.best, self.best_step = state["best"], state["best_step"]
        self._weights = dict(state["weights"])
