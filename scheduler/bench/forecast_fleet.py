"""A fleet's forecasts fitted at once: ``count`` jobs of five weeks of minutes each, in this
process and as one PySpark job (``henge bench forecast --fleet``), the two ways ``henge forecast
fit`` can run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from scheduler.forecast.ahead import forecast_ahead
from scheduler.spark.forecasts import fit_on_spark

MINUTES = 5 * 7 * 1440
"""Five weeks of minutes per job."""
START = datetime(2026, 1, 5, tzinfo=UTC)


@dataclass(frozen=True)
class FleetFigures:
    jobs: int
    in_process_s: float
    spark_s: float | None
    master: str | None

    def lines(self) -> list[str]:
        out = [
            f"{self.jobs:,} jobs of five weeks of minutes: {self.in_process_s:.1f} s in one process"
            f" ({1000 * self.in_process_s / self.jobs:.1f} ms a job)"
        ]
        if self.spark_s is not None:
            out.append(
                f"as one PySpark job on {self.master}: {self.spark_s:.1f} s, the session's start "
                f"included ({1000 * self.spark_s / self.jobs:.1f} ms a job)"
            )
        return out


def fleet(count: int, seed: int = 3) -> dict[str, list[float]]:
    """``count`` series: a daily and weekly shape, each job at its own level and phase, with
    noise that lasts a few minutes."""
    rng = np.random.default_rng(seed)
    minute = np.arange(MINUTES)
    day = np.sin(2 * np.pi * minute / 1440)
    weekend = ((minute // 1440) % 7 >= 5).astype(float)
    jobs: dict[str, list[float]] = {}
    for k in range(count):
        phase = int(rng.integers(0, 1440))
        shape = 1.0 + 0.6 * np.roll(day, phase) - 0.3 * weekend
        noise = np.exp(np.convolve(rng.normal(0, 0.08, MINUTES), np.ones(5) / 5, mode="same"))
        jobs[f"job-{k:05d}"] = list(float(rng.uniform(200, 5000)) * shape * noise)
    return jobs


def measure(count: int, master: str | None) -> FleetFigures:
    """Fit ``count`` jobs in this process, then (with ``master``) on Spark; the same fits."""
    jobs = fleet(count)
    started = time.perf_counter()
    for rates in jobs.values():
        forecast_ahead(rates, START)
    here = time.perf_counter() - started
    spark_s = None
    if master is not None:
        started = time.perf_counter()
        fitted = fit_on_spark({k: (START, v) for k, v in jobs.items()}, master=master)
        spark_s = time.perf_counter() - started
        if len(fitted) != count:
            raise RuntimeError(f"Spark fitted {len(fitted)} of {count} jobs")
    return FleetFigures(count, here, spark_s, master)
