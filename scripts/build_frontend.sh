#!/usr/bin/env bash
# Build the problem page's code editor (CodeMirror 6, from the npm registry) into
# web/static/dist/editor.js. Idempotent: skips the build when the bundle is newer than the
# sources and the lockfile. Without Node the site still works with a plain textarea.
set -euo pipefail
cd "$(dirname "$0")/../web/frontend"

log() { printf '\033[1m[frontend]\033[0m %s\n' "$*"; }

if ! command -v npm >/dev/null; then
  log "WARNING: npm is missing: the problem page falls back to a plain textarea (install Node.js 18+ and rerun)"
  exit 0
fi

OUT=../static/dist/editor.js
if [[ -f "$OUT" && -d node_modules && -z "$(find src package.json package-lock.json -newer "$OUT" -print -quit)" ]]; then
  log "editor bundle is up to date"
  exit 0
fi

if [[ ! -d node_modules || package-lock.json -nt node_modules ]]; then
  log "installing the editor's npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi
log "bundling the editor into web/static/dist/"
npm run --silent build
