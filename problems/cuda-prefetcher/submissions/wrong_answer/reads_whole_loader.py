# Wrong: list(loader) first, then copies one batch ahead: the whole dataset is read into host
# memory before the first step (a real loader's data does not fit).
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
        batches = list(self.loader)
        if not self.cuda:
            yield from batches
            return
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            moved = [move(b, self.device, True) for b in batches[:1]]
        for k in range(len(batches)):
            torch.cuda.current_stream().wait_stream(side)
            batch = moved[k]
            record(batch, torch.cuda.current_stream())
            if k + 1 < len(batches):
                with torch.cuda.stream(side):
                    moved.append(move(batches[k + 1], self.device, True))
            yield batch
