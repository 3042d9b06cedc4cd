"""Reference: pad a batch to its own longest sequence, mask built from the lengths."""

import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    if len(batch) == 0:
        raise ValueError("cannot collate an empty batch")

    lengths = torch.tensor([len(sample["input_ids"]) for sample in batch], dtype=torch.long)
    longest = int(lengths.max())
    if pad_to_multiple_of and longest % pad_to_multiple_of:
        longest += pad_to_multiple_of - longest % pad_to_multiple_of

    # The mask comes from the lengths: a real token may well equal pad_id.
    positions = torch.arange(longest)
    if padding_side == "right":
        attention_mask = positions < lengths[:, None]
    else:
        attention_mask = positions >= (longest - lengths)[:, None]

    input_ids = torch.full((len(batch), longest), pad_id, dtype=torch.long)
    # Boolean assignment fills the True positions row by row, left to right: exactly the
    # order of the concatenated sequences, for either padding side.
    input_ids[attention_mask] = torch.cat([sample["input_ids"] for sample in batch]).long()

    labels = torch.tensor([int(sample["label"]) for sample in batch], dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
