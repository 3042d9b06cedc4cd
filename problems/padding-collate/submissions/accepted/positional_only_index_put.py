# Accepted: batch is positional-only (collate(batch, pad_id, pad_to_multiple_of,
# padding_side) and keywords both work); every token's (row, column) is computed at once
# and written with one index_put_.
import torch


def collate(batch, /, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', not {padding_side!r}")
    if len(batch) == 0:
        raise ValueError("collate() needs at least one sample")
    lengths = torch.tensor([s["input_ids"].numel() for s in batch], dtype=torch.int64)
    width = int(lengths.max())
    if pad_to_multiple_of is not None and width % pad_to_multiple_of:
        width += pad_to_multiple_of - width % pad_to_multiple_of
    rows = torch.repeat_interleave(torch.arange(len(batch)), lengths)
    starts = torch.cumsum(lengths, 0) - lengths  # where each row's tokens begin in the concat
    cols = torch.arange(int(lengths.sum())) - starts[rows]
    if padding_side == "left":
        cols += (width - lengths)[rows]
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.int64)
    attention_mask = torch.zeros((len(batch), width), dtype=torch.bool)
    tokens = torch.cat([s["input_ids"].reshape(-1) for s in batch]).to(torch.int64)
    input_ids.index_put_((rows, cols), tokens)
    attention_mask[rows, cols] = True
    labels = torch.tensor([int(s["label"]) for s in batch], dtype=torch.int64)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
