# torch-judge images: one file, two targets (docs/deploy.md).
#
#   docker build --target cpu -t torch-judge:cpu .     # the web app and CPU workers
#   docker build --target gpu -t torch-judge:gpu .     # GPU workers (the CUDA build of torch)
#
# Build arguments:
#   TORCH_SPEC       the CPU target's torch (default torch==2.13.0, the version setup.sh uses)
#   TORCH_INDEX_URL  where the CPU target gets it: set it to PyTorch's CPU wheel index for the
#                    CPU-only build (~200 MB instead of ~2.5 GB of CUDA libraries); empty:
#                    pip's configured index, which on Linux serves the CUDA build (it runs on
#                    CPUs too, only bigger). The build prints which one it got.
#   TORCH_CUDA_SPEC  the GPU target's torch (default torch==2.13.0, the CUDA build: its wheels
#                    bring the CUDA libraries; the host's NVIDIA driver comes in at run time)
#   TORCH_CUDA_INDEX_URL  an index for a given CUDA version of it; empty: pip's index
#
# No secret is ever built in: the worker token, the secret key and the database password
# come at run time from compose secrets (docker-compose.yml).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG NODE_IMAGE=node:20-bookworm-slim

# ---------------------------------------------------------------- the editor bundle
FROM ${NODE_IMAGE} AS editor
WORKDIR /src/web/frontend
COPY web/frontend/package.json web/frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY web/frontend/src ./src
RUN npm run --silent build    # writes /src/web/static/dist/editor.js

# ---------------------------------------------------------------- the sandbox and Python
FROM ${PYTHON_IMAGE} AS base
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/app/.venv/bin:$PATH
# bubblewrap, tini, libseccomp2, util-linux (setpriv), the slot users and /run/torch-judge,
# exactly as on a machine: the same script (its checks need a running container, so they
# run when the sandbox starts instead: the launcher probes it and says what is missing)
COPY scripts/install_sandbox.sh /usr/local/sbin/install_sandbox.sh
RUN install_sandbox.sh --no-check && rm -rf /var/lib/apt/lists/*
COPY scripts/container_entrypoint.sh /usr/local/sbin/container_entrypoint.sh
WORKDIR /app
RUN python -m venv /app/.venv

FROM base AS torch-cpu
ARG TORCH_SPEC=torch==2.13.0
ARG TORCH_INDEX_URL=
RUN pip install ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "$TORCH_SPEC" \
    && python -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'

FROM base AS torch-gpu
ARG TORCH_CUDA_SPEC=torch==2.13.0
ARG TORCH_CUDA_INDEX_URL=
RUN pip install ${TORCH_CUDA_INDEX_URL:+--index-url "$TORCH_CUDA_INDEX_URL"} "$TORCH_CUDA_SPEC" \
    && python -c 'import torch; assert torch.version.cuda, "not a CUDA build of torch"; print("torch", torch.__version__, "CUDA", torch.version.cuda)'

# ---------------------------------------------------------------- the judge
# The same install as scripts/setup.sh (editable, the web and worker extras), so that the
# sandbox's layout (sandbox/layout.py) sees what it sees on a machine.
FROM torch-cpu AS cpu
COPY . /app
COPY --from=editor /src/web/static/dist /app/web/static/dist
RUN pip install -e ".[web,worker]" && mkdir -p /data
ENV JUDGE_DATA_DIR=/data JUDGE_PROBLEMS_DIR=/app/problems
VOLUME ["/data"]
EXPOSE 8000
ENTRYPOINT ["tini", "--", "container_entrypoint.sh"]
CMD ["python", "-m", "judge", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "0"]

FROM torch-gpu AS gpu
COPY . /app
RUN pip install -e ".[worker]"
ENV JUDGE_PROBLEMS_DIR=/app/problems NVIDIA_DRIVER_CAPABILITIES=compute,utility
ENTRYPOINT ["tini", "--", "container_entrypoint.sh"]
CMD ["python", "-m", "judge", "worker", "--server", "http://web:8000", "--gpu", "auto"]
