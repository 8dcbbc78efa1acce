# syntax=docker/dockerfile:1.7
# plowline-devstack: the local stand-ins (BigQuery with the fidelity corrections, Cloud Storage,
# and plowline's Pub/Sub emulator) and the `plowline` command. Build from the repository root:
#   docker build -f deploy/docker/devstack.Dockerfile -t plowline-devstack:dev .
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
    uv sync --frozen --no-dev --no-install-workspace --package plowline-devstack
# Step 2, the workspace packages themselves, installed as wheels (not editable) so the
# runtime stage needs only the virtual environment.
COPY libs libs
COPY services services
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable --package plowline-devstack

FROM python:3.11.11-slim-bookworm AS runtime
LABEL org.opencontainers.image.title="plowline-devstack"
RUN groupadd --system --gid 10001 plowline \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin plowline \
 && install --directory --owner 10001 --group 10001 /data
COPY --from=builder /app/.venv /app/.venv
# bqemulator must start offline (no DuckDB extension downloads); DuckDB and the emulators
# write under HOME and /data, never into the image.
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    BQEMU_ENABLE_FORMAT_EXTENSIONS=false \
    HOME=/tmp
WORKDIR /data
USER 10001:10001
# One server per container, started as `plowline dev up` starts it (see docker-compose.yml):
#   BigQuery (REST 9050, gRPC 9060):
#     --entrypoint python IMAGE -m plowline_devstack.bigquery --host 0.0.0.0 --port 9050 --grpc-port 9060 --project P
#   Cloud Storage (9023):   --entrypoint python IMAGE -m plowline_devstack.storage start --host 0.0.0.0 --port 9023 -q --no-store-on-disk
#   Pub/Sub (8085):         --entrypoint python IMAGE -m plowline_devstack.pubsub --host 0.0.0.0 --port 8085
# The servers differ, so their health checks live with each service in docker-compose.yml.
# checkov:skip=CKV_DOCKER_2:one image, three servers on different ports; each compose service has its own healthcheck
EXPOSE 8085 9023 9050 9060
ENTRYPOINT ["plowline"]
CMD ["--help"]
