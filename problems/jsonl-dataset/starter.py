"""jsonl-dataset: a map-style Dataset over a JSON Lines file too big to parse into memory.

Use it as DataLoader(JsonlDataset("train.jsonl"), batch_size=32, shuffle=True,
num_workers=2): every worker process calls dataset[i] for the indices it is given.
"""

import torch


class JsonlDataset(torch.utils.data.Dataset):
    def __init__(self, path, transform=None):
        """Scan the file once and keep the byte offset of every record line: not the lines,
        not the records. A record line is any line that holds more than spaces, tabs and
        \\r; lines are separated by b"\\n" only."""
        raise NotImplementedError("write __init__")

    def __len__(self):
        """The number of records."""
        raise NotImplementedError("write __len__")

    def __getitem__(self, i):
        """Record i, json.loads'ed, then passed through transform if there is one.
        Negative i counts from the end; out of range raises IndexError."""
        # Every DataLoader worker is a process of its own: never read through a file object
        # that another process opened (after fork they share one file position), and make
        # sure the dataset can be pickled (spawn sends it to each worker that way).
        raise NotImplementedError("write __getitem__")
