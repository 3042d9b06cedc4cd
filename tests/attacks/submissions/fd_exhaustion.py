# expect: runtime_error
# what: opens files until the descriptor table is full
def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    held = []
    while True:
        held.append(open("/dev/null"))  # noqa: SIM115 (kept open on purpose)
