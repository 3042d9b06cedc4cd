#!/usr/bin/env bash
# Set up (idempotent) and serve the judge: the web app and its local workers, data in
# $JUDGE_DATA_DIR (default ./data). Extra arguments go to `python -m judge serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec "${JUDGE_VENV:-.venv}/bin/python" -m judge serve "$@"
