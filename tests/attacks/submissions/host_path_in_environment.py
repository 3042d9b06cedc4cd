# expect: runtime_error
# what: looks for the host's folders in its environment and cwd
# not-shown: {root}

# The warm template was started in the worker's folder: bubblewrap kept it and set
# PWD=<that folder> in every job's environment.

import os


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    raise RuntimeError(f"ATTACK-RAN env={dict(os.environ)!r} cwd={os.getcwd()!r}")
