#!/usr/bin/env bash
# Entrypoint of the loader's `spark` image target.
#
# Spark on Kubernetes (and so the Spark operator) starts its pods as `<image> driver ARGS`
# and `<image> executor`, passing everything else in environment variables. Spark's own
# images answer with /opt/entrypoint.sh; pyspark from PyPI ships no such script, so this
# one does the same job for the pip-installed Spark in /app/.venv. Any other first
# argument runs the console script, so `docker run IMAGE run --config ...` still works.
set -euo pipefail

# Spark hands executor JVM options over as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in order.
executor_java_opts() {
  local i=0 name
  while name="SPARK_JAVA_OPT_$i" && [[ -v $name ]]; do
    printf '%s\0' "${!name}"
    i=$((i + 1))
  done
}

case "${1:-}" in
  driver)
    shift
    # Not spark-submit under tini: tini would signal the JVM, whose shutdown hooks stop
    # Spark under the loader's in-flight batch. driver_pod.py runs the same spark-submit
    # as Spark's own entrypoint and hands SIGTERM to the Python driver (the loader).
    exec /usr/bin/tini -s -- /app/.venv/bin/python /opt/plowline/driver_pod.py "$@"
    ;;
  executor)
    shift
    mapfile -d '' java_opts < <(executor_java_opts)
    exec /usr/bin/tini -s -- "$JAVA_HOME/bin/java" \
      "${java_opts[@]}" \
      -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
      -cp "${SPARK_CLASSPATH:-}:$SPARK_HOME/jars/*" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" \
      --executor-id "${SPARK_EXECUTOR_ID}" \
      --cores "${SPARK_EXECUTOR_CORES}" \
      --app-id "${SPARK_APPLICATION_ID}" \
      --hostname "${SPARK_EXECUTOR_POD_IP}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID}" \
      --podName "${SPARK_EXECUTOR_POD_NAME}"
    ;;
  *)
    exec plowline-loader "$@"
    ;;
esac
