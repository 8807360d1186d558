"""A Spark standalone cluster on loopback, started from the installed PySpark (tests, examples,
demos). ``python -m scheduler.spark start|stop|status``."""

from scheduler.spark.local_cluster import LocalCluster, LocalClusterError, local_cluster

__all__ = ["LocalCluster", "LocalClusterError", "local_cluster"]
