# Wrong: no finiteness check: a first NaN becomes best (and nothing improves after it), and
# -inf in "min" mode is an improvement.
class EarlyStopping:
    def __init__(self, patience, *, min_delta=0.0, mode="min"):
        if patience < 0 or min_delta < 0 or mode not in ("min", "max"):
            raise ValueError("bad arguments")
        self.patience, self.min_delta, self.mode = patience, min_delta, mode
        self.best = None
        self.best_step = None
        self.calls = 0
        self.bad = 0
        self.weights = None

    def improves(self, metric):
        if self.best is None:
            return True
        if self.mode == "min":
            return metric < self.best - self.min_delta
        return metric > self.best + self.min_delta

    def step(self, metric, model):
        self.calls += 1
        if self.improves(metric):
            self.best, self.best_step, self.bad = metric, self.calls, 0
            self.weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
            return False
        self.bad += 1
        return self.bad >= self.patience

    def restore(self, model):
        model.load_state_dict(self.weights)

    def state_dict(self):
        return {"best": self.best, "best_step": self.best_step, "calls": self.calls,
                "bad": self.bad, "weights": self.weights}

    def load_state_dict(self, state):
        self.best, self.best_step = state["best"], state["best_step"]
        self.calls, self.bad, self.weights = state["calls"], state["bad"], state["weights"]
