# judge-check: needs cuda
# Correct but too slow ON A GPU: a plain synchronous .to(device) per batch, the loop from the
# top of the statement: every copy waits for the step before it, and every step for its
# copy. (On a CPU device it passes the batches through, as it should.)
import torch


def move(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(move(x, device) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(move(x, device) for x in obj)
    if isinstance(obj, dict):
        return {k: move(v, device) for k, v in obj.items()}
    return obj


class CudaPrefetcher:
    def __init__(self, loader, device):
        self.loader, self.device = loader, torch.device(device)

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            yield move(batch, self.device)
