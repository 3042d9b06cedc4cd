#!/usr/bin/env bash
# Set up a fresh machine for the judge, idempotently: a virtualenv with the CPU build of
# torch and the project's dependencies, the sandbox (bubblewrap, uids) when run as root,
# the editor bundle (npm), and with --test also Chromium for the browser tests.
#
#   scripts/setup.sh           # what serving needs
#   scripts/setup.sh --test    # and what the tests need
#
# TORCH_SPEC chooses the torch to install first (default: torch==2.13.0, a CPU build; a
# plain "torch" from PyPI is a multi-GB CUDA build — set TORCH_SPEC=torch for a GPU worker).
set -euo pipefail
cd "$(dirname "$0")/.."

FOR_TESTS=0
[[ "${1:-}" == "--test" ]] && FOR_TESTS=1
VENV=${JUDGE_VENV:-.venv}
PY=${PYTHON:-python3}

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "Python 3.11 or newer is needed (found $("$PY" --version))" >&2; exit 1; }

if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"

if ! "$VPY" -c 'import torch' 2>/dev/null; then
  log "installing ${TORCH_SPEC:-torch==2.13.0} (before anything that depends on torch)"
  "$VPY" -m pip install -q "${TORCH_SPEC:-torch==2.13.0}"
fi

STAMP="$VENV/.deps-stamp"
WANT=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$WANT" ]]; then
  log "installing the project's dependencies"
  "$VPY" -m pip install -q -e ".[web,worker,dev]"
  echo "$WANT" > "$STAMP"
fi

if [[ $(id -u) -eq 0 ]]; then
  if [[ -x scripts/install_sandbox.sh ]]; then
    scripts/install_sandbox.sh
  fi
  if [[ $FOR_TESTS -eq 1 ]] && { ! command -v chromium >/dev/null || ! fc-list 2>/dev/null | grep -qi "noto.*cjk"; }; then
    log "installing Chromium and CJK fonts for the browser tests"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk >/dev/null
  fi
  if [[ $FOR_TESTS -eq 1 ]]; then
    # A PostgreSQL server (tests/web/postgres.py starts throwaway clusters with its
    # binaries) and a compose parser (tests/test_deploy.py validates docker-compose.yml).
    want=()
    command -v initdb >/dev/null || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null \
      || want+=(postgresql)
    command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 \
      || want+=(docker-compose)
    if [[ ${#want[@]} -gt 0 ]]; then
      log "installing for the tests: ${want[*]}"
      # no recommends: docker-compose's would bring a whole container engine
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${want[@]}" >/dev/null
    fi
  fi
else
  command -v bwrap >/dev/null || log "WARNING: bubblewrap is missing and this is not root: install it (apt-get install bubblewrap) or the judge cannot sandbox submissions"
fi

if [[ -x scripts/build_frontend.sh ]]; then
  scripts/build_frontend.sh
fi
log "ready"
