# expect: runtime_error
# what: raises an exception whose message holds lone surrogates
# shown: bad � char �

# No UTF-8 encoder takes them: the CLI's print crashed, and so did the worker's
# HTTP post of the report (then the job was claimed again, forever).


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    raise ValueError("bad \ud800 char \udfff")
