# expect: wrong_answer
# what: returns dict keys and strings made of lone surrogates
def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return {"\ud800": "\udfff", "input_ids": ["\ud800"], "attention_mask": ("\udbff",),
            "labels": {"\udc00": 1}}
