def double(x):
    return x  # TODO
