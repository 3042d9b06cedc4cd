# Accepted: one code path for every device: the side stream and pinning only on CUDA
# (contextlib.nullcontext on a CPU), .to(device, non_blocking=True) everywhere (on a CPU it
# returns the very same tensor), a sentinel object for the end of the loader.
import contextlib

import torch

_END = object()


class CudaPrefetcher:
    def __init__(self, loader, device):
        self.loader = loader
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"

    def __len__(self):
        return len(self.loader)

    def _move(self, x):
        if torch.is_tensor(x):
            if self.cuda and not x.is_pinned():
                x = x.pin_memory()
            return x.to(self.device, non_blocking=True)
        if isinstance(x, dict):
            return {k: self._move(v) for k, v in x.items()}
        if isinstance(x, list):
            return [self._move(v) for v in x]
        if isinstance(x, tuple):
            moved = [self._move(v) for v in x]
            return x._make(moved) if hasattr(x, "_make") else tuple(moved)
        return x

    def _mark(self, x, stream):
        if torch.is_tensor(x):
            x.record_stream(stream)
        elif isinstance(x, dict):
            for v in x.values():
                self._mark(v, stream)
        elif isinstance(x, (list, tuple)):
            for v in x:
                self._mark(v, stream)

    def __iter__(self):
        side = torch.cuda.Stream(self.device) if self.cuda else None
        it = iter(self.loader)

        def fetch():
            batch = next(it, _END)
            if batch is _END:
                return _END
            with torch.cuda.stream(side) if self.cuda else contextlib.nullcontext():
                return self._move(batch)

        nxt = fetch()
        while nxt is not _END:
            if self.cuda:
                current = torch.cuda.current_stream(self.device)
                current.wait_stream(side)
                self._mark(nxt, current)
            batch, nxt = nxt, fetch()
            yield batch
