# judge-check: needs cuda
# Wrong on a GPU only: the current stream waits for the copies, but the tensors are never
# marked with record_stream: once the caller drops a batch, the caching allocator gives its
# memory to the next copy even if a kernel queued on the current stream has not read it yet.
import torch


def move(obj, device):
    if isinstance(obj, torch.Tensor):
        if not obj.is_pinned():
            obj = obj.pin_memory()
        return obj.to(device, non_blocking=True)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(move(x, device) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(move(x, device) for x in obj)
    if isinstance(obj, dict):
        return {k: move(v, device) for k, v in obj.items()}
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

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        if self.device.type != "cuda":
            yield from self.loader
            return
        side = torch.cuda.Stream()
        it = iter(self.loader)
        end = object()

        def load():
            batch = next(it, end)
            if batch is end:
                return end
            with torch.cuda.stream(side):
                return move(batch, self.device)

        nxt = load()
        while nxt is not end:
            torch.cuda.current_stream().wait_stream(side)
            batch = nxt
            nxt = load()
            yield batch
