#!/usr/bin/env bash
# The whole test suite in two parts that run at the same time (`make test` calls this).
#
# The real Spark tests (tests/spark) time real processes: drivers, executors and servers whose
# phases the tests bound in seconds. They run alone in one pytest process at normal priority.
# Most of their time is spent waiting on those processes, so the rest of the suite (the tests
# that start no Spark, on four workers) runs beside them at a lower priority (nice 10): it takes
# the cores the Spark tests leave idle and yields them whenever the Spark processes want them.
# The Spark part's output goes to a log and is printed whole once both parts have ended; the
# exit code is non-zero if either part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
SPARK_LOG=${SPARK_LOG:-test-artifacts/spark-tests.log}
mkdir -p "$(dirname "$SPARK_LOG")"

started=$(date +%s)
"$BIN/pytest" tests/spark --durations=25 >"$SPARK_LOG" 2>&1 &
spark_pid=$!
stop_spark() { kill "$spark_pid" 2>/dev/null; wait "$spark_pid" 2>/dev/null; exit 130; }
trap stop_spark INT TERM

echo "== the tests that start no Spark (four workers, nice 10), beside the real Spark tests =="
nice -n 10 "$BIN/pytest" --numprocesses 4 --ignore tests/spark --durations=25
rest_rc=$?
rest_done=$(date +%s)

wait "$spark_pid"
spark_rc=$?
trap - INT TERM
echo "tests without Spark: exit $rest_rc after $((rest_done - started)) s;" \
  "real Spark tests: exit $spark_rc after $(($(date +%s) - started)) s"
echo
echo "== the real Spark tests (run alongside; log: $SPARK_LOG) =="
cat "$SPARK_LOG"
if ((rest_rc != 0)); then exit "$rest_rc"; fi
exit "$spark_rc"
