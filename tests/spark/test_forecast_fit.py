"""`henge forecast fit --engine spark`: every job's forecast fitted as one PySpark job on a real
local Spark session, the same as the fit in this process on the same series."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler.forecast.ahead import forecast_ahead
from scheduler.spark.forecasts import fit_on_spark
from tests.spark.conftest import spark_unavailable

pytestmark = pytest.mark.spark

START = datetime(2026, 3, 2, tzinfo=UTC)


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    why = spark_unavailable()
    if why:
        pytest.skip(f"real Spark unavailable: {why}")
    from pyspark.sql import SparkSession

    # (the Python workers run this interpreter, which has the fitter)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PYSPARK_PYTHON", sys.executable)
        yield from _session(SparkSession)


def _session(builder_of: Any) -> Iterator[object]:
    session = (
        builder_of.builder.master("local[2]")
        .appName("henge-forecast-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    yield session
    session.stop()


def series(job: int, days: int) -> list[float]:
    rates = [
        (500.0 + 100 * job) * (1.5 + math.sin(2 * math.pi * m / 1440 + job))
        for m in range(days * 1440)
    ]
    rates[100 + job] = math.nan  # a minute no window covered
    return rates


def test_the_spark_fit_is_the_in_process_fit(spark: object) -> None:
    jobs = {f"job-{k}": (START, series(k, 2 + k)) for k in range(3)}
    on_spark = fit_on_spark(jobs, spark=spark)  # type: ignore[arg-type]
    assert set(on_spark) == set(jobs)
    for job_id, (first, rates) in jobs.items():
        here = forecast_ahead(rates, first + timedelta(minutes=len(rates)))
        there = on_spark[job_id]
        assert there.start == here.start
        assert there.mean == pytest.approx(here.mean, rel=1e-12)
        assert there.upper == pytest.approx(here.upper, rel=1e-12)
        assert there.naive == pytest.approx(here.naive, rel=1e-12)
        assert there.error == pytest.approx(here.error) and there.method == here.method
    assert fit_on_spark({}, spark=spark) == {}  # type: ignore[arg-type]
