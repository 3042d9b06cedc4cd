# expect: memory_limit_exceeded
# what: asks torch for one huge tensor
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return torch.ones(64 << 30, dtype=torch.uint8)
