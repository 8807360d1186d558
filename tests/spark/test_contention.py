"""Three priority tiers on one real Spark worker: the top tier's spike is fed from the bottom tier.

Runs :data:`scheduler.bench.spark_contention.SHORT`: a 5-core standalone worker; ``gold``
(priority 90, 1 executor at base), ``silver`` (50, needs its 2) and ``bronze`` (10, needs its
2), each a ``pageload`` driver with the henge-agent wheel, a real ``henge serve`` on Postgres
with the product policy. Gold's input then rises beyond what one executor takes, so it needs a
second one and the cluster has no free core; after the spike it falls back. The assertions read
what Spark reports (cores per application on the master), the registry (targets, SLOs, rounds
and actions) and the processes left behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.bench.contention_report import save_record
from scheduler.bench.spark_contention import SHORT, ContentionRun, meets, run_contention

pytestmark = pytest.mark.spark

MEETS_SLO_WITHIN_S = 120.0
"""The top tier meets its SLO this long after its spike starts at the latest: before the spike
ends. Its latency passes the objective 15-25 s into the spike (rows must queue up first), it is
grown (eq. 2.4, its model still untrusted after the warm-up) in the first round in which its
loss outweighs the bottom tier's, 2-8 s later, its second executor runs within 5 s, and the rows
queued until then are worked off at the two executors' capacity less the input. Measured on a
2-core machine: 57 and 59 s once a one-executor step of eq. 2.4 was valued at its whole gain,
58-67 s before; on a slower, busier machine (a whole CI run 25 min) 102 s before, the working off
taking twice as long. The spike lasted 100 s then; it lasts 120 s now, so that the bound leaves
room."""
HANDED_BACK_WITHIN_S = 125.0
"""After the spike the bottom tier holds its initial executors again within this. The top tier
can only offer its second executor once its recent peak input has decayed (``stabilization_s``,
20 s, counted from when its 15-s window lets go of the spike), and the move back is made in a
round that finds the bottom tier's step worth more than that executor; the bottom tier, short of
executors, finishes a batch only every 20-30 s. Measured on a 2-core machine, the executor's
start in Spark included: 52, 55, 60, 60, 62 and 76 s with a 100-s spike, 41 s with the 120-s one
(which can leave bronze about 500 rows more to work off); the bound leaves room for that and for a
machine as slow as the one above."""


def test_the_top_tier_takes_its_spike_from_the_bottom_tier(
    driver_python: Path, fresh_pg_url: str, tmp_path: Path
) -> None:
    spec = SHORT
    gold, silver, bronze = spec.tiers
    run: ContentionRun = run_contention(spec, driver_python, fresh_pg_url, tmp_path, print)
    save_record(run, tmp_path / "spark-contention.json")
    for action in run.actions:
        print(action)
    for r in run.rounds:  # what each round saw, for a failure's report
        if run.spike_start_s - 30 <= r.t_s <= run.spike_end_s + 30:
            print(f"{r.t_s:8.2f} {r.state} {r.action}: {r.reason}")

    # Before the spike every tier meets its SLO on its initial executors.
    settled = run.during(run.spike_start_s - 10, run.spike_start_s)
    assert settled, run.samples[:5]
    for tier in spec.tiers:
        assert all(s.spark[tier.name] == tier.initial for s in settled), (tier.name, settled)
        assert meets(settled[-1], tier), (tier.name, settled[-1])

    # The spike: Spark gives gold a second executor, taken from bronze, not silver.
    spike = run.during(run.spike_start_s, run.spike_end_s)
    met = run.first(
        run.spike_start_s,
        lambda s: s.spark[gold.name] > gold.initial and meets(s, gold),
    )
    assert met is not None, [(s.t_s, s.spark, s.latency_ms[gold.name]) for s in spike]
    assert met.t_s - run.spike_start_s <= MEETS_SLO_WITHIN_S, met
    assert min(s.spark[bronze.name] for s in spike) < bronze.initial
    assert min(s.spark[silver.name] for s in spike) == silver.initial
    assert max(sum(s.spark.values()) for s in run.samples) <= spec.worker_cores

    # The registry's actions say the same: gold grew, bronze shrank, silver was left alone.
    moved = [a for a in run.actions if run.spike_start_s <= a.t_s <= met.t_s]
    assert any(a.job == gold.name and a.to_executors > a.from_executors for a in moved), moved
    assert any(a.job == bronze.name and a.to_executors < a.from_executors for a in moved), moved
    assert not any(a.job == silver.name and a.to_executors < a.from_executors
                   for a in run.actions if a.t_s >= run.spike_start_s), run.actions  # fmt: skip

    # After the spike gold's surplus goes back and bronze takes it.
    back = run.first(
        run.spike_end_s,
        lambda s: s.spark[bronze.name] == bronze.initial and s.spark[gold.name] == gold.initial,
    )
    assert back is not None, [(s.t_s, s.spark) for s in run.during(run.spike_end_s, 1e9)]
    assert back.t_s - run.spike_end_s <= HANDED_BACK_WITHIN_S, back

    # Never below a job's minimum, in Spark or in the registry; nothing left running.
    for tier in spec.tiers:
        assert min(s.spark[tier.name] for s in run.samples) >= tier.min, tier.name
        assert min(s.target[tier.name] for s in run.samples) >= tier.min, tier.name
    assert all(a.to_executors >= {t.name: t.min for t in spec.tiers}[a.job] for a in run.actions)
    assert run.apps_after_stop == ()
    assert run.cores_after_stop == 0
