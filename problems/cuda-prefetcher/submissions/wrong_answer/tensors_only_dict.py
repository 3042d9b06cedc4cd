# Wrong: {k: v.to(device) for k, v in batch.items() if torch.is_tensor(v)}: whatever is not a
# tensor (a sample's id, its source, a list of lengths) is silently dropped from the batch.
import torch


def move(obj, device, cuda):
    if torch.is_tensor(obj):
        if cuda and not obj.is_pinned():
            obj = obj.pin_memory()
        return obj.to(device, non_blocking=True)
    if isinstance(obj, dict):
        return {k: move(v, device, cuda) for k, v in obj.items() if torch.is_tensor(v)}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(move(x, device, cuda) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(move(x, device, cuda) for x in obj)
    return obj


def record(obj, stream):
    if torch.is_tensor(obj):
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
        ready = False
        for batch in self.loader:
            if self.cuda:
                with torch.cuda.stream(side):
                    moved = move(batch, self.device, True)
            else:
                moved = move(batch, self.device, False)
            if ready:
                yield current
            if self.cuda:
                torch.cuda.current_stream().wait_stream(side)
                record(moved, torch.cuda.current_stream())
            current, ready = moved, True
        if ready:
            yield current
