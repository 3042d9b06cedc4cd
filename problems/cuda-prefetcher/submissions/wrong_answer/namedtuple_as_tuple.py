# Wrong: tuples are rebuilt with tuple(...), so a namedtuple batch comes out as a plain tuple
# (batch.inputs no longer works). The same walk runs on every device.
import torch


def move(obj, device, cuda):
    if isinstance(obj, torch.Tensor):
        if cuda and not obj.is_pinned():
            obj = obj.pin_memory()
        return obj.to(device, non_blocking=True)
    if isinstance(obj, tuple):
        return tuple(move(x, device, cuda) for x in obj)
    if isinstance(obj, list):
        return [move(x, device, cuda) for x in obj]
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
        done = object()

        def load():
            batch = next(it, done)
            if batch is done or not self.cuda:
                return batch if batch is done else move(batch, self.device, False)
            with torch.cuda.stream(side):
                return move(batch, self.device, True)

        nxt = load()
        while nxt is not done:
            if self.cuda:
                torch.cuda.current_stream().wait_stream(side)
                record(nxt, torch.cuda.current_stream())
            batch, nxt = nxt, load()
            yield batch
