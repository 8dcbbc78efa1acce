# syntax=docker/dockerfile:1.7
# plowline-mutator: build from the repository root:
#   docker build -f deploy/docker/mutator.Dockerfile -t plowline-mutator:dev .
# Base images are pinned by exact tag; pin by digest too in CI (see deploy/GKE.md).

FROM ghcr.io/astral-sh/uv:0.13.9 AS uv

FROM python:3.11.11-slim-bookworm AS builder
COPY --from=uv /uv /uvx /bin/
# gcc: plowline-core builds one C extension (the enriched-line decoder); the runtime stage
# gets only the built venv.
RUN apt-get update \
 && apt-get install --yes --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3.11 \
    UV_PROJECT_ENVIRONMENT=/app/.venv
WORKDIR /src
# Step 1, third-party dependencies only: this layer is rebuilt only when the lock or a
# pyproject changes, not on every source edit. uv needs every member's pyproject to load
# the workspace.
COPY pyproject.toml uv.lock ./
COPY libs/core/pyproject.toml libs/core/
COPY libs/cloud/pyproject.toml libs/cloud/
COPY libs/devstack/pyproject.toml libs/devstack/
COPY services/loader/pyproject.toml services/loader/
COPY services/mutator/pyproject.toml services/mutator/
COPY services/repeater/pyproject.toml services/repeater/
COPY services/deadletter/pyproject.toml services/deadletter/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-install-workspace --package plowline-mutator
# Step 2, the workspace packages themselves, installed as wheels (not editable) so the
# runtime stage needs only the virtual environment.
COPY libs libs
COPY services services
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable --package plowline-mutator

FROM python:3.11.11-slim-bookworm AS runtime
LABEL org.opencontainers.image.title="plowline-mutator"
RUN groupadd --system --gid 10001 plowline \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin plowline
# Owned by root: the service user can run the code but not change it.
COPY --from=builder /app/.venv /app/.venv
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
ENV PLOWLINE_MUTATOR_HOST=0.0.0.0
WORKDIR /app
USER 10001:10001
# the HTTP API (serve): POST/GET /v1/columns; /healthz /readyz /metrics
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]
ENTRYPOINT ["plowline-mutator"]
CMD ["--help"]
