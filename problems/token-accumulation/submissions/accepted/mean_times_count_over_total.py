# Accepted: the way transformers fixed it (num_items_in_batch): the window's token count is
# known before the first backward, and each micro-batch's MEAN loss is re-weighted by its
# share of the window's tokens, mean_i * n_i / N. A micro-batch with no counted token is
# skipped (its mean would be 0/0 = NaN).
import torch.nn.functional as F


def train_epoch(model, loader, optimizer, accum_steps, *, ignore_index=-100):
    batches = list(loader)
    results = []
    for start in range(0, len(batches), accum_steps):
        window = batches[start:start + accum_steps]
        counts = [int(labels.ne(ignore_index).sum().item()) for _, labels in window]
        num_items_in_batch = sum(counts)
        if num_items_in_batch == 0:
            continue
        optimizer.zero_grad()
        weighted = 0.0
        for (input_ids, labels), n_i in zip(window, counts):
            if n_i == 0:
                continue
            logits = model(input_ids)
            mean_loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(),
                                        ignore_index=ignore_index)
            share = n_i / num_items_in_batch
            (mean_loss * share).backward()
            weighted += mean_loss.item() * share
        optimizer.step()
        results.append(weighted)
    return results
