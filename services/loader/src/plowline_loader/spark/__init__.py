"""The loader's Spark session and its start-up tuning, held to one pyspark version.

    session         ``build_spark_session``: the conf (no UI, loopback, few shuffle
                    partitions), the driver's JVM flags (serial GC, C1 only, capped heap,
                    the class archive) and the environment the JVM reads (SPARK_HOME,
                    the Python of the source's processes)
    spark_home      a SPARK_HOME without the zipped pyspark, so Spark's Python processes
                    import the installed, compiled one
    converters      py4j's NumPy converters asked only once NumPy is loaded (the driver
                    never imports pandas)
    worker_daemon   pyspark's worker daemon, with the workers' imports done before it forks
    worker_heap     a worker's heap frozen once warm, collected seldom while a task runs
    class_archive   the driver JVM's AppCDS class archive (``plowline-loader class-archive``)

Notes:
    Every module here leans on pyspark's internals as of ``PYSPARK_VERSION`` (the daemon's
    ``manager``, the converters pyspark registers, the layout of its package, what a
    session's start loads), which the loader pins. A new pyspark is a change to this
    package first: a unit test fails while the installed pyspark differs from it.
    Nothing here is imported by ``batch``.
"""

PYSPARK_VERSION = "4.3.0"
"""The pyspark the tuning here was written against (the loader's pin)."""
