"""Isolation for untrusted submissions: the runner (untrusted side), its protocol, and
the launcher that starts, limits and kills it (trusted side)."""
