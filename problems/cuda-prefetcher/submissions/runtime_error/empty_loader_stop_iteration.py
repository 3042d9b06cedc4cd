# Runtime error: next(it) for the first batch without a default: on an empty loader the
# StopIteration escapes the generator, which Python turns into a RuntimeError.
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

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        side = torch.cuda.Stream() if self.cuda else None
        it = iter(self.loader)
        first = next(it)
        if self.cuda:
            with torch.cuda.stream(side):
                nxt = move(first, self.device, True)
        else:
            nxt = first
        for batch in it:
            if self.cuda:
                torch.cuda.current_stream().wait_stream(side)
                record(nxt, torch.cuda.current_stream())
                current = nxt
                with torch.cuda.stream(side):
                    nxt = move(batch, self.device, True)
            else:
                current, nxt = nxt, batch
            yield current
        if self.cuda:
            torch.cuda.current_stream().wait_stream(side)
            record(nxt, torch.cuda.current_stream())
        yield nxt
