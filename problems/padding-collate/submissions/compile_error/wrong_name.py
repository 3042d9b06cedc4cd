# Defines collate_fn instead of the required name collate.
import torch


def collate_fn(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return {}
