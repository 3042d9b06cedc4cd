# expect: time_limit_exceeded|runtime_error
# what: a DataLoader worker turns into a fork bomb
# within: 40
import os

from torch.utils.data import DataLoader, Dataset


class Bomb(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        while True:  # in the worker process: every child forks forever too
            try:
                os.fork()
            except OSError:
                pass


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return list(DataLoader(Bomb(), batch_size=2, num_workers=2))
