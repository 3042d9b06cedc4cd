#!/usr/bin/env bash
# Everything that needs a GPU, as one run, for a machine lent for a few minutes:
#
#   bash bench/gpu_check.sh [SLUG ...]        # default: every problem with CUDA cases or checks
#
# Run from anywhere on a machine with an NVIDIA GPU and a CUDA build of torch in $PY
# (default python3: on the device machine, the image's python3, which holds torch).
# Nothing is downloaded: this checkout is installed (--no-deps, editable) into $PY's
# environment if it is not there yet, so that pytest finds its entry points. Without bubblewrap set up
# (scripts/install_sandbox.sh) the judge runs with --no-sandbox (verdicts and ratios are the
# same; the sandbox's own GPU tests then skip).
#
# It prints, with the time each step took, and writes the same to $OUT/gpu_check.txt
# (OUT defaults to /tmp):
#   1. the machine, torch and the GPU;
#   2. bench/prefetch_probe.py: raw figures for cuda-prefetcher (copy times, the speed
#      check's loop per solution, whether the races show, the copy log);
#   3. python -m judge check -v -j 1 SLUG...: every file's verdict and speed ratios, CUDA
#      cases and '# judge-check: needs cuda' fixtures included (one file at a time, so that
#      no other job shares the GPU's copy engine with a timing; GPU_CHECK_JOBS=2 halves the
#      time at that risk);
#   4. pytest -m gpu: the tests that need a GPU (the sandbox's skip without bubblewrap);
#   5. bench/gpu_worker_check.py: a GPU worker (python -m judge worker --gpu 0) against a
#      local server judges grad-accumulation's reference and its CUDA-only too_slow
#      fixture and cuda-prefetcher's reference, submitted through the API: verdicts,
#      submit -> verdict seconds, each speed check's device and ratio.
# What each result must show is written in the README ("GPU checks").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_check.txt") 2>&1

PY=${PY:-python3}
step() { printf '\n=== %s  (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "1. machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
"$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda,
          "available", torch.cuda.is_available())' || exit 1

# The entry points pytest's conftest looks for; nothing else is installed (--no-deps), and
# on the lent machine the environment is thrown away afterwards.
if ! "$PY" -c 'from importlib import metadata; import sys
sys.exit(not metadata.entry_points(group="torch_judge.commands"))' 2>/dev/null; then
  "$PY" -m pip install -q --no-deps --no-build-isolation -e . \
    || echo "(could not install this checkout: pytest will refuse to run)"
fi

ISOLATION=(--no-sandbox)
if command -v bwrap >/dev/null && "$PY" -c 'from sandbox.bwrap import BwrapLauncher' 2>/dev/null \
    && [[ "${GPU_CHECK_SANDBOX:-0}" == 1 ]]; then
  ISOLATION=()
fi
export JUDGE_NO_SANDBOX=$([[ ${#ISOLATION[@]} -gt 0 ]] && echo 1 || echo 0)

if [[ $# -gt 0 ]]; then
  SLUGS=("$@")
else
  mapfile -t SLUGS < <("$PY" - <<'EOF'
from judge.package import load_all
for p in load_all():
    if any(c.device == "cuda" for c in p.tests.cases) or any(
            t.device == "cuda" for t in p.meta.throughput):
        print(p.slug)
EOF
)
fi
echo "problems with CUDA parts: ${SLUGS[*]}"

step "2. cuda-prefetcher: raw figures"
start=$SECONDS
"$PY" bench/prefetch_probe.py --reps 3
echo "($((SECONDS - start)) s)"

step "3. judge check, CUDA included"
for slug in "${SLUGS[@]}"; do
  t0=$SECONDS
  "$PY" -m judge check "$slug" -v -j "${GPU_CHECK_JOBS:-1}" "${ISOLATION[@]}"
  echo "($slug: $((SECONDS - t0)) s)"
done

step "4. pytest -m gpu"
# Only the files that hold GPU tests: the others may import what this machine lacks.
mapfile -t GPU_TESTS < <(grep -rl --include='test_*.py' 'mark.gpu' tests/)
if "$PY" -c 'import pytest' 2>/dev/null; then
  "$PY" -m pytest -m gpu -p no:cacheprovider -o addopts="-ra" "${GPU_TESTS[@]}" 2>&1 | tail -40
else
  echo "pytest is not installed here: skipped"
fi

step "5. a GPU worker against a local server"
t0=$SECONDS
"$PY" bench/gpu_worker_check.py --gpu "${GPU_CHECK_GPU:-0}" "${ISOLATION[@]}"
echo "($((SECONDS - t0)) s)"

step "done"
