"""padding-collate: pad a batch of variable-length sequences.

Use it as DataLoader(dataset, batch_size=..., collate_fn=lambda b: collate(b, pad_id=...)).
"""

import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    """Pad `batch` (a list of {"input_ids": LongTensor[L], "label": int}) and return
    {"input_ids": int64 [B, T], "attention_mask": bool [B, T], "labels": int64 [B]}.

    T is the longest L in this batch, rounded up to a multiple of pad_to_multiple_of when
    that is given. padding_side "right" puts the tokens first, "left" the padding first.
    """
    # 1. Check padding_side and that the batch is not empty (raise ValueError otherwise).
    # 2. Find this batch's longest length, and round it up if pad_to_multiple_of is set.
    # 3. Build the mask from the lengths (never by comparing ids with pad_id).
    # 4. Fill a [B, T] tensor of pad_id with the tokens; do not modify the samples.
    raise NotImplementedError("write collate")
