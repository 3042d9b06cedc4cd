# expect: runtime_error
# what: leaves a 1500-deep chain of folders (and 144 MB at its bottom) in its job folder
# shown: ATTACK-RAN

# shutil.rmtree recurses once per level: the grader's clean-up raised RecursionError (not an
# OSError, so ignore_errors did not help), grade() crashed without a report and the job's
# tmpfs, never emptied, stayed mounted: its memory held until the worker restarted.

import os

DEPTH = 1500


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    top = os.getcwd()
    n = 0
    while os.path.exists(os.path.join(top, f"deep{n}")):
        n += 1
    os.mkdir(f"deep{n}")
    os.chdir(f"deep{n}")
    for _ in range(DEPTH):
        os.mkdir("d")
        os.chdir("d")
    if n == 0:
        for i in range(3):  # RLIMIT_FSIZE: 64 MB a file
            with open(f"ballast{i}", "wb") as f:
                for _ in range(48):
                    f.write(b"\1" * (1 << 20))
    os.chdir(top)
    raise RuntimeError(f"ATTACK-RAN {DEPTH} folders deep")
