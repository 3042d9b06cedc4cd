# Wrong: the loader's iterator is made once, in __init__: the first pass uses it up and the
# second pass (the next epoch) yields nothing.
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


class CudaPrefetcher:
    def __init__(self, loader, device):
        self.loader, self.device = loader, torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.it = iter(loader)
        self.side = torch.cuda.Stream() if self.cuda else None

    def __len__(self):
        return len(self.loader)

    def _load(self):
        try:
            batch = next(self.it)
        except StopIteration:
            return None, False
        if self.cuda:
            with torch.cuda.stream(self.side):
                return move(batch, self.device, True), True
        return move(batch, self.device, False), True

    def __iter__(self):
        nxt, ok = self._load()
        while ok:
            if self.cuda:
                torch.cuda.current_stream().wait_stream(self.side)
                record(nxt, torch.cuda.current_stream())
            batch = nxt
            nxt, ok = self._load()
            yield batch
