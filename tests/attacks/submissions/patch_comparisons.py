# expect: wrong_answer
# what: makes every comparison in its own process say "equal", then returns garbage
import torch

torch.equal = lambda *a, **k: True
torch.allclose = lambda *a, **k: True
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return {"input_ids": torch.zeros(1, 1, dtype=torch.long),
            "attention_mask": torch.ones(1, 1, dtype=torch.bool),
            "labels": torch.zeros(1, dtype=torch.long)}
