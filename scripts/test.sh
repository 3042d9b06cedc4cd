#!/usr/bin/env bash
# Set up (idempotent, with the test extras) and run the whole test suite in parallel.
# Extra arguments go to pytest (e.g. -m "not browser", -k grader).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
mkdir -p test-artifacts
exec "${JUDGE_VENV:-.venv}/bin/python" -m pytest -n "${JUDGE_TEST_WORKERS:-auto}" \
  --junitxml=test-artifacts/junit.xml "$@"
