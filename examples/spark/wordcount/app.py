"""Word count: sentences → words → running count per word.

    python examples/spark/wordcount/app.py --master $SPARK_MASTER_URL --source rate --rate 50 \
        --henge-url $HENGE_URL --job-id $JOB --token $AGENT_TOKEN
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import parser, run


def build(spark, lines):  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    sentences = lines.select(
        F.concat_ws(" ", F.col("word"), F.col("region"), F.lit("spark"), F.col("word")).alias(
            "line"
        )
    )
    words = sentences.select(F.explode(F.split(F.col("line"), " ")).alias("word"))
    counts = words.groupBy("word").count()
    return counts.writeStream.outputMode("update").format("noop")


if __name__ == "__main__":
    args = parser(__doc__).parse_args()
    sys.exit(run("wordcount", build, args))
