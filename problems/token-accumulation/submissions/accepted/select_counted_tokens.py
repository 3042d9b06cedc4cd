# Accepted: selects the counted positions with a boolean mask, computes the cross-entropy
# by hand (log_softmax + gather), and indexes windows with (i + 1) % accum_steps and
# len(loader); the window's count comes from a first pass over its labels.
import torch


def token_nll_sum(logits, labels, ignore_index):
    keep = labels != ignore_index
    picked = logits[keep]  # [n, V]
    targets = labels[keep]
    logp = torch.log_softmax(picked, dim=-1)
    return -logp.gather(1, targets[:, None]).sum()


def train_epoch(model, loader, optimizer, accum_steps, *, ignore_index=-100):
    out = []
    pending = []
    last = len(loader) - 1
    for i, batch in enumerate(loader):
        pending.append(batch)
        if (i + 1) % accum_steps != 0 and i != last:
            continue
        total_tokens = sum(int((lab != ignore_index).sum()) for _, lab in pending)
        if total_tokens > 0:
            for p in model.parameters():
                p.grad = None
            running = 0.0
            for input_ids, labels in pending:
                nll = token_nll_sum(model(input_ids), labels, ignore_index)
                (nll / total_tokens).backward()
                running += float(nll.detach())
            optimizer.step()
            out.append(running / total_tokens)
        pending = []
    return out
