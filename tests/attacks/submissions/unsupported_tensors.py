# expect: wrong_answer
# what: returns tensors the protocol cannot carry (uint16, sparse, meta)
# shown: dtype torch.uint16

# Each must be named for what it is, not "expected a torch.Tensor, got
# torch.Tensor".

import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return {"input_ids": torch.zeros(3, dtype=torch.uint16),
            "attention_mask": torch.zeros(3, 3).to_sparse(),
            "labels": torch.zeros(3, device="meta")}
