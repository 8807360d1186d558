"""PageLoad-style job: page-load events → filter → transform → windowed aggregation per region.

    python examples/spark/pageload/app.py --master $SPARK_MASTER_URL --source generator \
        --rate 200 --cost-us 2000 --henge-url $HENGE_URL --job-id $JOB --token $AGENT_TOKEN
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import parser, run


def build(spark, events, aggregate: bool = True):  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    slow_or_fast = (
        events.where(F.col("load_ms") > 0)  # filter: drop broken beacons
        .where(~F.col("page").endswith("/0"))  # and the health-check page
        .withColumn("load_s", F.col("load_ms") / 1000.0)  # transform
        .withColumn("slow", (F.col("load_ms") > 800).cast("int"))
    )
    if not aggregate:
        return slow_or_fast.writeStream.format("noop")
    per_region = (
        slow_or_fast.withWatermark("ts", "10 seconds")
        .groupBy(F.window("ts", "10 seconds"), F.col("region"))  # windowed aggregation
        .agg(
            F.count("*").alias("loads"),
            F.avg("load_s").alias("mean_load_s"),
            F.sum("slow").alias("slow_loads"),
        )
    )
    return per_region.writeStream.outputMode("update").format("noop")


if __name__ == "__main__":
    options = parser(__doc__)
    options.add_argument(
        "--no-aggregation",
        action="store_true",
        help="filter and transform only: no windowed aggregation, so no shuffle and no state, "
        "and a batch's work is its rows' (the contention benchmark runs this)",
    )
    args = options.parse_args()
    sys.exit(run("pageload", partial(build, aggregate=not args.no_aggregation), args))
