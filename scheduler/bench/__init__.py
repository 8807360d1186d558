"""Benchmarks that measure the scheduler service (``henge bench ...``)."""
