# judge-check: needs cuda
# Wrong on a GPU only: moves the batch's own tensors and those one level down (a tuple of
# tensors, a dict of tensors), but not deeper ones: a dict holding a list of tensors, a
# namedtuple inside a tuple stay on the CPU.
import torch


def move_tensor(x, device):
    if not x.is_pinned():
        x = x.pin_memory()
    return x.to(device, non_blocking=True)


def move(batch, device):
    if isinstance(batch, torch.Tensor):
        return move_tensor(batch, device)
    if isinstance(batch, dict):
        return {k: move_tensor(v, device) if torch.is_tensor(v) else v for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        items = [move_tensor(v, device) if torch.is_tensor(v) else v for v in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else type(batch)(items)
    return batch


def record(batch, stream):
    values = batch.values() if isinstance(batch, dict) else (
        batch if isinstance(batch, (list, tuple)) else [batch])
    for v in values:
        if torch.is_tensor(v) and v.is_cuda:
            v.record_stream(stream)


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
            record(batch, torch.cuda.current_stream())
            nxt = load()
            yield batch
