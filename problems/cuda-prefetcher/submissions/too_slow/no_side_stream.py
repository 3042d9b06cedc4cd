# judge-check: needs cuda
# Correct but too slow ON A GPU: pinned memory and non_blocking=True, but the copies are
# issued on the current stream, behind the step that came before them: copy and compute
# take turns on the GPU, nothing overlaps. (On a CPU device the batches pass through.)
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
        it = iter(self.loader)
        end = object()
        nxt = next(it, end)
        nxt = end if nxt is end else move(nxt, self.device)
        while nxt is not end:
            batch = nxt
            following = next(it, end)
            nxt = end if following is end else move(following, self.device)
            yield batch
