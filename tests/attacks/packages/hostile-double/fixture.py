"""Runs in the runner: reads a data file the grader (here: the grader box) wrote into the
job folder, so the test sees that the box's writes reach its runners."""


def read_number(sol, ctx, name):
    with open(name) as f:
        return sol.double(int(f.read()))
