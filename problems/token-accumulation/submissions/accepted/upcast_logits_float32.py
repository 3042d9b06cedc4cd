# Accepted: the usual logits.float() before the loss (an upcast from bfloat16 in real
# training; here the model is float64, so it rounds to float32, well within the tolerance),
# slicing a list of the loader's micro-batches into windows.
import torch.nn.functional as F


def train_epoch(model, loader, optimizer, accum_steps, *, ignore_index=-100):
    batches = list(loader)
    out = []
    for s in range(0, len(batches), accum_steps):
        w = batches[s:s + accum_steps]
        n = sum(int((lab != ignore_index).sum()) for _, lab in w)
        if not n:
            continue
        optimizer.zero_grad()
        tot = 0.0
        for ids, lab in w:
            logits = model(ids).float()   # the usual upcast before the loss
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), lab.view(-1),
                                   ignore_index=ignore_index, reduction="sum") / n
            loss.backward()
            tot += loss.item()
        optimizer.step()
        out.append(tot)
    return out
