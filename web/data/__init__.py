"""Data access, one module per resource: ``accounts`` (users, tokens), ``submissions``,
``standings`` (statistics, leaderboard), ``workers``, ``queue`` (judge, validate and rank
jobs: claim, lease, finish), ``ranking`` (the leaderboard's timing by rank jobs),
``bank`` (problems, versions, validation, publishing) and ``audit_log``. Functions take a
Session; the caller commits unless a function says it does (queue operations commit:
each is one atomic step)."""
