"""Every job's input forecast fitted as one PySpark job (``henge forecast fit --engine spark``):
a row per job holding its minutes, grouped by job, one pandas fit per group on the executors,
the forecasts collected back. The fit is :func:`scheduler.forecast.ahead.forecast_ahead`, the
same as in-process, so that a fleet too large for the scheduler's process is fitted on Spark's
cores instead, with the same results.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from scheduler.core.model import InputForecast
from scheduler.forecast.ahead import forecast_ahead

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

_EPOCH = datetime(1970, 1, 1)
_OUT = (
    "job_id string, mean array<double>, upper array<double>, naive array<double>, "
    "error double, method string"
)

DRIVER_MEMORY = "4g"
"""The driver's heap for a session of its own (Spark's default, 1 GB, cannot hold a thousand
jobs' five weeks of minutes on their way to the executors)."""

Series = tuple[datetime, Sequence[float]]
"""A job's first minute and its rate per minute from there (NaN where unknown)."""


def fit_on_spark(
    series: Mapping[str, Series], *, spark: SparkSession | None = None, master: str = "local[*]"
) -> dict[str, InputForecast]:
    """The forecast of each job in ``series``, fitted on ``spark`` (or on a session of its own
    on ``master``, stopped afterwards, whose executors run this process's Python: they import
    the fitter from it)."""
    if not series:
        return {}
    import pandas as pd
    from pyspark.sql import SparkSession

    if spark is None:
        # The executors' Python workers run this interpreter, which has the fitter (PySpark
        # reads the variable when the session starts; one already set is kept).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = spark or (
        SparkSession.builder.master(master)
        .appName("henge-forecast-fit")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Every job's minutes pass through the driver (five weeks of a thousand jobs: 400 MB).
        .config("spark.driver.memory", DRIVER_MEMORY)
        .getOrCreate()
    )
    try:
        rows = pd.DataFrame(
            {"job_id": list(series), "rates": [[float(r) for r in s[1]] for s in series.values()]}
        )
        frame = session.createDataFrame(rows, "job_id string, rates array<double>")
        fitted = frame.groupBy("job_id").applyInPandas(_fit_group, _OUT).collect()
    finally:
        if spark is None:
            session.stop()
    return {row["job_id"]: _forecast(row.asDict(), series[row["job_id"]]) for row in fitted}


def _fit_group(group: pd.DataFrame) -> pd.DataFrame:
    """One job's fit (runs on an executor)."""
    import pandas as pd

    out = []
    for job_id, rates in zip(group["job_id"], group["rates"], strict=True):
        forecast = forecast_ahead(list(rates), _EPOCH)
        out.append(
            {
                "job_id": job_id,
                "mean": list(forecast.mean),
                "upper": list(forecast.upper),
                "naive": list(forecast.naive),
                "error": forecast.error,
                "method": forecast.method,
            }
        )
    return pd.DataFrame(out)


def _forecast(row: Mapping[str, Any], series: Series) -> InputForecast:
    first, rates = series
    error = row["error"]
    return InputForecast(
        start=first + timedelta(minutes=len(rates)),
        mean=tuple(row["mean"]),
        upper=tuple(row["upper"]),
        naive=tuple(row["naive"]),
        error=None if error is None or math.isnan(error) else float(error),
        method=row["method"],
    )
