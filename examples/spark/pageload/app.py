"""PageLoad-style job: page-load events → filter → transform → windowed aggregation per region.

    python examples/spark/pageload/app.py --master $SPARK_MASTER_URL --source generator \
        --rate 200 --cost-us 2000 --henge-url $HENGE_URL --job-id $JOB --token $AGENT_TOKEN
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import parser, run


def build(spark, events):  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    slow_or_fast = (
        events.where(F.col("load_ms") > 0)  # filter: drop broken beacons
        .where(~F.col("page").endswith("/0"))  # and the health-check page
        .withColumn("load_s", F.col("load_ms") / 1000.0)  # transform
        .withColumn("slow", (F.col("load_ms") > 800).cast("int"))
    )
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
    args = parser(__doc__).parse_args()
    sys.exit(run("pageload", build, args))
