"""The trusted core of the judge: problem packages, the grader and its CLI."""

__version__ = "0.1.0"
