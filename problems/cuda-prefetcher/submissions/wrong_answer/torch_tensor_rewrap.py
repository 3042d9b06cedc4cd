# Wrong: moves tensors with torch.tensor(x, device=device), which always copies (and warns):
# on a CPU device every tensor of every batch is duplicated instead of passed through.
import torch


def move(obj, device, cuda):
    if isinstance(obj, torch.Tensor):
        if cuda and not obj.is_pinned():
            obj = obj.pin_memory()
        return obj.to(device, non_blocking=True)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(move(x, device, cuda) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(move(x, device, cuda) for x in obj)
    if isinstance(obj, dict):
        return {k: move(v, device, cuda) for k, v in obj.items()}
    return obj


def record(obj, stream):
    if isinstance(obj, torch.Tensor):
        obj.record_stream(stream)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            record(x, stream)
    elif isinstance(obj, dict):
        for x in obj.values():
            record(x, stream)


def rewrap(obj, device):
    if isinstance(obj, torch.Tensor):
        return torch.tensor(obj, device=device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(rewrap(x, device) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(rewrap(x, device) for x in obj)
    if isinstance(obj, dict):
        return {k: rewrap(v, device) for k, v in obj.items()}
    return obj


class CudaPrefetcher:
    def __init__(self, loader, device):
        self.loader, self.device = loader, torch.device(device)

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            yield rewrap(batch, self.device)
