# expect: runtime_error
# what: encodes the speed check's hidden pad_id in the line number of an exception
# throughput: yes
# within: 120
# shown: during the speed test
# not-shown-re: line \d{5} of your file

# The speed check's message showed "line N of your file", N taken from the runner's
# report: code compiled with this file's name and a chosen first line made N the hidden
# pad_id (plus 20000), which the learner then read off the verdict.

import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if len(batch) == 256 and pad_to_multiple_of == 8:  # the speed check's inputs
        line = 20000 + pad_id
        exec(compile("\n" * (line - 1) + "raise ValueError('ATTACK-RAN')", __file__, "exec"))
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    if not batch:
        raise ValueError("cannot collate an empty batch")
    lengths = torch.tensor([len(s["input_ids"]) for s in batch], dtype=torch.long)
    longest = int(lengths.max())
    if pad_to_multiple_of and longest % pad_to_multiple_of:
        longest += pad_to_multiple_of - longest % pad_to_multiple_of
    positions = torch.arange(longest)
    if padding_side == "right":
        mask = positions < lengths[:, None]
    else:
        mask = positions >= (longest - lengths)[:, None]
    ids = torch.full((len(batch), longest), pad_id, dtype=torch.long)
    ids[mask] = torch.cat([s["input_ids"] for s in batch]).long()
    labels = torch.tensor([int(s["label"]) for s in batch], dtype=torch.long)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
