#!/usr/bin/env bash
# Build the site's front-end from the npm registry into web/static/dist/ (not committed):
# the code editor (CodeMirror 6, editor.js), statement math (KaTeX, math.js, math.css and
# fonts/), and the API docs' own copies of Swagger UI and ReDoc (docs/), so /docs and /redoc
# need no outside network. Idempotent: skips the build when every output is newer than the
# sources and the lockfile. Without Node the site still works: a plain textarea, math as
# TeX, and /docs says how to build its files.
set -euo pipefail
cd "$(dirname "$0")/../web/frontend"

log() { printf '\033[1m[frontend]\033[0m %s\n' "$*"; }

if ! command -v npm >/dev/null; then
  log "WARNING: npm is missing: the problem page falls back to a plain textarea (install Node.js 18+ and rerun)"
  exit 0
fi

DIST=../static/dist
OUTPUTS=("$DIST/editor.js" "$DIST/math.js" "$DIST/math.css" "$DIST/docs/swagger-ui-bundle.js"
         "$DIST/docs/swagger-ui.css" "$DIST/docs/redoc.standalone.js")
up_to_date() {
  [[ -d node_modules ]] || return 1
  local out
  for out in "${OUTPUTS[@]}"; do
    [[ -f "$out" && -z "$(find src package.json package-lock.json -newer "$out" -print -quit)" ]] || return 1
  done
}
if up_to_date; then
  log "front-end bundles are up to date"
  exit 0
fi

if [[ ! -d node_modules || package-lock.json -nt node_modules ]]; then
  log "installing the front-end's npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi
log "bundling the editor and math, copying the API docs' files into web/static/dist/"
npm run --silent build
