"""Reference: a prefetcher that copies the next batch to the GPU while the current one is used.

For every batch: pin its tensors if the loader did not (a non_blocking copy from pageable
memory is not asynchronous), issue the copies on a side stream with non_blocking=True,
and before handing the batch out make the consumer's stream wait for that side stream and
mark every tensor with record_stream, so that the caching allocator does not give its
memory to another tensor while the consumer's stream may still read it.
"""

import torch


def move(obj, device):
    """``obj`` with every tensor (inside tuples, namedtuples, lists and dicts, nested) moved
    to ``device`` asynchronously; everything else as it is."""
    if isinstance(obj, torch.Tensor):
        if obj.device.type == "cpu" and not obj.is_pinned():
            obj = obj.pin_memory()
        return obj.to(device, non_blocking=True)
    if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):  # a namedtuple
        return type(obj)(*(move(x, device) for x in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(move(x, device) for x in obj)
    if isinstance(obj, dict):
        return {k: move(v, device) for k, v in obj.items()}
    return obj


def record(obj, stream):
    """Tell the caching allocator that ``stream`` uses every CUDA tensor in ``obj``."""
    if isinstance(obj, torch.Tensor):
        if obj.is_cuda:
            obj.record_stream(stream)
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            record(x, stream)
    elif isinstance(obj, dict):
        for x in obj.values():
            record(x, stream)


class CudaPrefetcher:
    def __init__(self, loader, device):
        self.loader = loader
        self.device = torch.device(device)

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        if self.device.type != "cuda":
            yield from self.loader  # nothing to copy: the batches pass through
            return
        copy_stream = torch.cuda.Stream(device=self.device)
        batches = iter(self.loader)  # a new iterator per pass: iterating twice works

        def load():
            """(True, the next batch, its copies issued on the side stream) or (False, None)."""
            for batch in batches:
                with torch.cuda.stream(copy_stream):
                    return True, move(batch, self.device)
            return False, None

        ready, nxt = load()
        while ready:
            consumer = torch.cuda.current_stream(self.device)
            consumer.wait_stream(copy_stream)  # the consumer reads only finished copies
            batch = nxt
            record(batch, consumer)
            ready, nxt = load()  # the next copy runs while the consumer uses `batch`
            yield batch
