# expect: wrong_answer
# what: returns an int of 5001 digits
# shown: got int

# The judge's JSON parser refused to convert it (a ValueError, not a
# ProtocolError): internal_error.

import sys

sys.set_int_max_str_digits(0)


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return {"input_ids": 10 ** 5000, "attention_mask": 1, "labels": 2}
