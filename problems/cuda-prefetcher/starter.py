"""cuda-prefetcher: copy the next batch to the GPU while the current one is being used.

    for batch in CudaPrefetcher(loader, "cuda"):
        loss = model(batch["x"]) ...        # batch's tensors are already on the GPU
"""

import torch


class CudaPrefetcher:
    def __init__(self, loader, device):
        """loader: any iterable of batches with a len() (a DataLoader, a list ...).
        device: "cuda", "cuda:0", "cpu" or a torch.device."""
        raise NotImplementedError("write __init__")

    def __len__(self):
        """As many batches as the loader has."""
        raise NotImplementedError("write __len__")

    def __iter__(self):
        """Yield the loader's batches in order, every tensor (nested in tuples, namedtuples,
        lists and dicts) moved to the device, everything else unchanged."""
        # On a CPU device: pass the batches through.
        # On CUDA: a side stream (torch.cuda.Stream()); for each batch, pin its tensors if
        # the loader did not, and issue .to(device, non_blocking=True) inside
        # `with torch.cuda.stream(side):`. Before handing a batch out, make the current
        # stream wait for the side stream and call record_stream on its tensors; then start
        # copying the next batch.
        raise NotImplementedError("write __iter__")
