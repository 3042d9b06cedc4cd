# expect: too_slow
# what: list collate (honest ~0.17) doing the work in a patched stage() on under half the calls
# throughput: yes
# within: 120

# The runner is in the submission's own process, so the submission can replace what the
# runner does between STAGE and RUN. Staging is charged, but one median over all calls let
# this through: with the work moved on under half of the calls the median staging time
# stayed honest, left padding's ratio soared, and the geometric mean of the two kinds read
# 0.47 ("accepted"). The judge now charges each call's staging beyond the reference's
# staging of the same inputs.
import sys

import torch

_count = [0, 0]


def _patch() -> None:
    frame = sys._getframe(1)
    while frame is not None:
        runner = frame.f_locals.get("self")
        if runner is not None and hasattr(runner, "staged") and hasattr(runner, "stage"):
            break
        frame = frame.f_back
    else:
        return
    if getattr(runner, "_patched", False):
        return
    original = runner.stage

    def stage(body):
        # The work goes before the runner's own stage(), which answers DONE at its end:
        # the grader starts its clock on that answer.
        args, kwargs = list(body.get("args") or []), dict(body.get("kwargs") or {})
        side = kwargs.get("padding_side", args[3] if len(args) > 3 else "right")
        _count[0] += 1  # stagings
        result = None
        if (side == "left" and _count[1] < 0.45 * _count[0] and args
                and isinstance(args[0], list)):
            _count[1] += 1  # stagings that did the work: always under half of them
            result = collate(*args, **kwargs)
        original(body)
        key = body.get("id")
        if result is not None and key in runner.staged:
            runner.staged[key] = (lambda: result, [], {})

    runner.stage = stage
    runner._patched = True


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    _patch()
    if not batch:
        raise ValueError("empty batch")
    if padding_side not in ("right", "left"):
        raise ValueError("padding_side")
    rows = [s["input_ids"].tolist() for s in batch]
    T = max(len(r) for r in rows)
    if pad_to_multiple_of and T % pad_to_multiple_of:
        T += pad_to_multiple_of - T % pad_to_multiple_of
    ids, mask = [], []
    for r in rows:
        k = T - len(r)
        if padding_side == "right":
            ids.append(r + [pad_id] * k)
            mask.append([True] * len(r) + [False] * k)
        else:
            ids.append([pad_id] * k + r)
            mask.append([False] * k + [True] * len(r))
    B = len(rows)
    input_ids = torch.tensor(ids, dtype=torch.int64).reshape(B, T)
    attention_mask = torch.tensor(mask, dtype=torch.bool).reshape(B, T)
    labels = torch.tensor([s["label"] for s in batch], dtype=torch.int64)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
