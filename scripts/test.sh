#!/usr/bin/env bash
# Set up (idempotent, with the test extras) and run the whole test suite in parallel.
# Extra arguments go to pytest (e.g. -m "not browser", -k grader). Work stealing keeps both
# workers busy to the end: a handful of `judge check` tests take minutes each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
mkdir -p test-artifacts
exec "${JUDGE_VENV:-.venv}/bin/python" -m pytest -n "${JUDGE_TEST_WORKERS:-auto}" --dist worksteal \
  --junitxml=test-artifacts/junit.xml "$@"
