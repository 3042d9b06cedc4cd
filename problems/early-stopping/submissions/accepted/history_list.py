# Accepted: keeps the whole history of metrics and recomputes the count from it; the best
# weights are CPU copies made with torch.Tensor.to(copy=True); restore with no_grad copy_.
import math

import torch


class EarlyStopping:
    def __init__(self, patience, *, min_delta=0.0, mode="min"):
        if patience < 0:
            raise ValueError("negative patience")
        if min_delta < 0:
            raise ValueError("negative min_delta")
        if mode not in ("min", "max"):
            raise ValueError("mode")
        self.patience, self.min_delta, self.mode = patience, min_delta, mode
        self.history = []  # [metric, improved] per call
        self.snapshot = None

    def _improved(self, metric):
        if not math.isfinite(metric):
            return False
        best = self.best
        if best is None:
            return True
        if self.mode == "max":
            return metric - self.min_delta > best
        return metric + self.min_delta < best

    @property
    def best(self):
        marks = [m for m, improved in self.history if improved]
        return marks[-1] if marks else None

    @property
    def best_step(self):
        steps = [i for i, (_, improved) in enumerate(self.history, 1) if improved]
        return steps[-1] if steps else None

    def step(self, metric, model):
        improved = self._improved(metric)
        self.history.append([metric, improved])
        if improved:
            self.snapshot = {name: tensor.to("cpu", copy=True)
                             for name, tensor in model.state_dict().items()}
            return False
        since = len(self.history) - (self.best_step or 0)
        return since >= self.patience

    def restore(self, model):
        own = model.state_dict()
        with torch.no_grad():
            for name, value in self.snapshot.items():
                own[name].copy_(value)

    def state_dict(self):
        return {"history": [list(h) for h in self.history], "snapshot": self.snapshot}

    def load_state_dict(self, state):
        self.history = [list(h) for h in state["history"]]
        self.snapshot = state["snapshot"]
