# syntax=docker/dockerfile:1.7
# plowline-loader: PySpark 4.3.0 on Java 17. Build from the repository root:
#   docker build -f deploy/docker/loader.Dockerfile -t plowline-loader:dev .                  # local[*] / docker compose
#   docker build -f deploy/docker/loader.Dockerfile --target spark -t plowline-loader-spark:dev .  # Spark operator
# The default target runs the console script; the `spark` target adds the entrypoint that
# Spark on Kubernetes expects (`driver` / `executor` as first argument).
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
# Step 1, third-party dependencies only (pyspark is most of the image): rebuilt only when
# the lock or a pyproject changes. uv needs every member's pyproject to load the workspace.
COPY pyproject.toml uv.lock ./
COPY libs/core/pyproject.toml libs/core/
COPY libs/cloud/pyproject.toml libs/cloud/
COPY libs/devstack/pyproject.toml libs/devstack/
COPY services/loader/pyproject.toml services/loader/
COPY services/mutator/pyproject.toml services/mutator/
COPY services/repeater/pyproject.toml services/repeater/
COPY services/deadletter/pyproject.toml services/deadletter/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-install-workspace --package plowline-loader
# Step 2, the workspace packages, as wheels: the runtime needs only the venv.
COPY libs libs
COPY services services
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable --package plowline-loader
# Hadoop's gs:// file system, for the streaming checkpoint on Cloud Storage
# (pyspark ships Hadoop but no GCS connector). Pinned version from Maven Central.
# checkov:skip=CKV_DOCKER_4:ADD fetches one pinned release jar by URL, which COPY cannot; the builder stage only
ADD https://repo1.maven.org/maven2/com/google/cloud/bigdataoss/gcs-connector/3.1.7/gcs-connector-3.1.7-shaded.jar \
    /app/.venv/lib/python3.11/site-packages/pyspark/jars/gcs-connector-3.1.7-shaded.jar
RUN chmod 0644 /app/.venv/lib/python3.11/site-packages/pyspark/jars/gcs-connector-3.1.7-shaded.jar
# Spark puts $SPARK_HOME/python/lib/pyspark.zip and py4j's zip first on the PYTHONPATH of
# every Python process it starts (data-source planners, the streaming source runner, the
# workers). Python keeps no bytecode for a zip, so each of them compiled pyspark again:
# 0.3-0.5 CPU-s per process before the first row (issue 17). The zips are copies of the
# installed packages, which this image ships compiled; without them those processes import
# the installed ones. (YARN alone needs pyspark.zip; this image runs local or on Kubernetes.)
RUN rm /app/.venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip \
       /app/.venv/lib/python3.11/site-packages/pyspark/python/lib/py4j-*-src.zip

FROM python:3.11.11-slim-bookworm AS base
# Java 17 from Debian (Spark 4 needs 17+); tini reaps the JVM's children in Spark pods.
RUN apt-get update \
 && apt-get install --yes --no-install-recommends openjdk-17-jre-headless tini procps \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)" /usr/lib/jvm/java-17 \
 && groupadd --system --gid 10001 plowline \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin plowline \
 && install --directory --owner 10001 --group 10001 --mode 0750 /var/lib/plowline
# /var/lib/plowline: the streaming checkpoint's home (docker compose mounts a named volume
# there; a new volume takes this directory's owner, so uid 10001 can write it).
# Owned by root: the service user can run the code but not change it.
COPY --from=builder /app/.venv /app/.venv
COPY deploy/docker/loader/driver.py deploy/docker/loader/driver_pod.py /opt/plowline/
COPY --chmod=0755 deploy/docker/loader/spark-entrypoint.sh /opt/plowline/spark-entrypoint.sh
# Driver and executors must run the venv's interpreter (it holds plowline and pyspark).
ENV JAVA_HOME=/usr/lib/jvm/java-17 \
    SPARK_HOME=/app/.venv/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/app/.venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/app/.venv/bin/python \
    PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
USER 10001:10001
# Driver health and metrics: /healthz /readyz /metrics
EXPOSE 8083

FROM base AS spark
LABEL org.opencontainers.image.title="plowline-loader-spark"
ENTRYPOINT ["/opt/plowline/spark-entrypoint.sh"]

FROM base AS runtime
LABEL org.opencontainers.image.title="plowline-loader"
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8083/healthz', timeout=2)"]
ENTRYPOINT ["plowline-loader"]
CMD ["--help"]
