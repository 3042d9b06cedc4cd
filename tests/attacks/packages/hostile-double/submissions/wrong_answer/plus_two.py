# Adds instead of multiplying.
def double(x):
    return x + 2
