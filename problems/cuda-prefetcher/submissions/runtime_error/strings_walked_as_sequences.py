# Runtime error: every collections.abc.Sequence is walked, strings included; a one-character
# string is a sequence of itself, so the walk recurses until RecursionError.
import collections.abc

import torch


def move(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, collections.abc.Mapping):
        return {k: move(v, device) for k, v in obj.items()}
    if isinstance(obj, collections.abc.Sequence):
        items = [move(x, device) for x in obj]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return type(obj)(*items)
        return type(obj)(items)
    return obj


class CudaPrefetcher:
    def __init__(self, loader, device):
        self.loader, self.device = loader, torch.device(device)

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            yield move(batch, self.device)
