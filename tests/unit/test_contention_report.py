"""The figures of a contention run, on a hand-made record (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.bench.contention_report import (
    job_figures,
    plot_contention,
    total_utility_fraction,
)
from scheduler.bench.spark_contention import (
    SHORT,
    ContentionRun,
    Sample,
    carry_latest,
    settled,
)
from scheduler.sim.types import ActionEvent

SLO = SHORT.tiers[0].latency_slo_ms


def _sample(t: float, gold_ms: float | None, gold_utility: float, gold_executors: int) -> Sample:
    return Sample(
        t_s=t,
        spark={"gold": gold_executors, "silver": 2, "bronze": 3 - gold_executors},
        target={"gold": gold_executors, "silver": 2, "bronze": 3 - gold_executors},
        utility={"gold": gold_utility, "silver": 50.0, "bronze": 10.0},
        latency_ms={"gold": gold_ms, "silver": 2000.0, "bronze": 2000.0},
    )


def _run() -> ContentionRun:
    samples = (
        _sample(0, 2000, 90, 1),
        _sample(10, 2000, 90, 1),  # the spike starts at 10
        _sample(20, SLO * 2, 45, 1),
        _sample(30, SLO * 1.5, 60, 2),
        _sample(40, 3000, 90, 2),  # met again 30 s into the spike
        _sample(50, 2000, 90, 2),  # the spike ends at 50
    )
    moved = (
        ActionEvent(25, "reconfigure", "gold", 1, 2, "eq. 2.4"),
        ActionEvent(25, "reconfigure", "bronze", 2, 1, "gives"),
    )
    return ContentionRun(SHORT, 10.0, 50.0, samples, moved, (), 0, ())


def test_figures_weight_each_sample_by_the_time_it_stands_for() -> None:
    figures = job_figures(_run())
    gold = figures["gold"]
    # Each sample stands for 10 s: utilities 90, 90, 45, 60, 90, 90 over the priority 90.
    assert gold.utility_fraction == pytest.approx((90 + 90 + 45 + 60 + 90 + 90) / 6 / 90)
    assert gold.executors == pytest.approx((1 + 1 + 1 + 2 + 2 + 2) / 6)
    assert gold.slo_met_after_spike_s == 30.0
    assert figures["silver"].slo_met_after_spike_s == 0.0
    total = (gold.utility_fraction * 90 + 1.0 * 50 + 1.0 * 10) / 150
    assert total_utility_fraction(_run()) == pytest.approx(total)


def test_a_window_without_a_batch_keeps_the_last_measured_latency() -> None:
    assert carry_latest({"gold": 2500.0}, {"gold": None}) == {"gold": 2500.0}
    assert carry_latest({"gold": 2500.0}, {"gold": 900.0}) == {"gold": 900.0}
    assert carry_latest(None, {"gold": None}) == {"gold": None}


def test_settled_needs_every_tier_on_its_initial_executors_meeting_its_slo() -> None:
    def base(t: float, silver_executors: int = 2) -> Sample:
        return Sample(
            t_s=t,
            spark={"gold": 1, "silver": silver_executors, "bronze": 2},
            target={"gold": 1, "silver": silver_executors, "bronze": 2},
            utility={"gold": 90.0, "silver": 50.0, "bronze": 10.0},
            latency_ms={"gold": 2000.0, "silver": 2000.0, "bronze": 2000.0},
        )

    steady = [base(float(t)) for t in range(12)]
    assert settled(SHORT, steady)
    assert not settled(SHORT, steady[:5])  # not long enough yet
    assert not settled(SHORT, [*steady[:-1], base(11.0, silver_executors=1)])


def test_the_figure_is_drawn(tmp_path: Path) -> None:
    path = plot_contention(_run(), tmp_path / "run.png")
    assert path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
