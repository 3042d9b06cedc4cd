# expect: runtime_error|memory_limit_exceeded
# what: returns a result larger than the protocol allows
import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return {"input_ids": torch.zeros(600 << 20, dtype=torch.uint8)}
