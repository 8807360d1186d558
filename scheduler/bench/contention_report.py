"""What a contention run on real Spark shows: per-job figures and the figure of the run.

The figures (time-weighted over the recorded samples) are what ``henge bench spark-contention``
prints and what a simulated run of the same scenario is compared with. The figure, in the style
of the thesis' figures (PNG): on top, total utility and each job's against the total priority;
below, the executors Spark held for each job (solid) and the scheduler's target (dotted). Every
action is a vertical line, and the spike is shaded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path

from scheduler.bench.server import temporary_database
from scheduler.bench.spark_contention import (
    ContentionRun,
    ContentionSpec,
    Sample,
    Tier,
    meets,
    run_contention,
)
from scheduler.sim.plots import draw_actions, new_figure
from scheduler.spark.apps import ROOT
from scheduler.spark.driver_env import build_agent_wheel, driver_environment


@dataclass(frozen=True)
class JobFigures:
    """One job's figures over a run (time-weighted over the recorded samples)."""

    utility_fraction: float
    """Mean utility over the priority (no utility yet counts as 0)."""
    executors: float
    """Mean executors Spark held for it."""
    mean_latency_ms: float | None
    slo_met_after_spike_s: float | None
    """From the spike's start until the job met its SLO again after its first miss (0: it never
    missed; None: it did not meet it again before the spike ended)."""


def _weights(samples: Sequence[Sample]) -> list[float]:
    """Each sample stands for the time until the next one (the last for the mean gap)."""
    if len(samples) < 2:
        return [1.0] * len(samples)
    gaps = [b.t_s - a.t_s for a, b in pairwise(samples)]
    return [*gaps, sum(gaps) / len(gaps)]


def _recovery_s(run: ContentionRun, tier: Tier) -> float | None:
    spike = run.during(run.spike_start_s, run.spike_end_s)
    missed = next((i for i, s in enumerate(spike) if not meets(s, tier)), None)
    if missed is None:
        return 0.0
    met = next((s for s in spike[missed:] if meets(s, tier)), None)
    return None if met is None else round(met.t_s - run.spike_start_s, 1)


def job_figures(run: ContentionRun) -> dict[str, JobFigures]:
    """Per job, by tier name."""
    samples = run.samples
    weights = _weights(samples)
    total = sum(weights) or 1.0
    figures = {}
    for tier in run.spec.tiers:
        name = tier.name
        utility = sum(w * (s.utility[name] or 0.0) for s, w in zip(samples, weights, strict=True))
        executors = sum(w * s.spark[name] for s, w in zip(samples, weights, strict=True))
        latencies = [
            (s.latency_ms[name], w)
            for s, w in zip(samples, weights, strict=True)
            if s.latency_ms[name] is not None
        ]
        latency_weight = sum(w for _, w in latencies)
        figures[name] = JobFigures(
            utility_fraction=utility / total / tier.priority,
            executors=executors / total,
            mean_latency_ms=(
                sum(v * w for v, w in latencies) / latency_weight if latency_weight else None
            ),
            slo_met_after_spike_s=_recovery_s(run, tier),
        )
    return figures


def total_utility_fraction(run: ContentionRun) -> float:
    """Time-weighted total utility over the total priority of the jobs."""
    figures = job_figures(run)
    priority = sum(t.priority for t in run.spec.tiers)
    return sum(figures[t.name].utility_fraction * t.priority for t in run.spec.tiers) / priority


def run_bench(
    spec: ContentionSpec,
    out_dir: Path,
    pg_server: str,
    figure: Path,
    progress: Callable[[str], None] = lambda _: None,
) -> tuple[ContentionRun, Path]:
    """``henge bench spark-contention``: the drivers' virtualenv (built once in ``out_dir``,
    reused afterwards), a throw-away database on ``pg_server``, the run, its JSON record in
    ``out_dir`` and its figure at ``figure``."""

    progress("building the henge-agent wheel and the drivers' virtualenv")
    wheel = build_agent_wheel(ROOT / "agent", out_dir / "wheel")
    python = driver_environment(out_dir / "driver-venv", wheel, reuse=True)
    with temporary_database(pg_server, prefix="henge_contention") as database_url:
        run = run_contention(spec, python, database_url, out_dir / "run", progress)
    save_record(run, out_dir / "spark-contention.json")
    return run, plot_contention(run, figure)


def save_record(run: ContentionRun, path: Path) -> Path:
    """The run (every sample, round and action) and its figures as JSON."""
    record = {
        "run": asdict(run),
        "jobs": {name: asdict(f) for name, f in job_figures(run).items()},
        "total_utility_fraction": total_utility_fraction(run),
    }
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def plot_contention(run: ContentionRun, path: Path) -> Path:
    figure = new_figure(2, 8.0)
    top, bottom = figure.axes
    samples = run.samples
    minutes = [s.t_s / 60.0 for s in samples]
    names = [t.name for t in run.spec.tiers]
    totals = [sum(u or 0.0 for u in s.utility.values()) for s in samples]
    top.step(minutes, totals, label="total utility", where="post", color="k")
    top.axhline(sum(t.priority for t in run.spec.tiers), color="0.5", linestyle="--",
                linewidth=0.8, label="max utility")  # fmt: skip
    for index, tier in enumerate(run.spec.tiers):
        values = [s.utility[tier.name] or 0.0 for s in samples]
        label = f"{tier.name} (priority {tier.priority:g})"
        top.step(minutes, values, label=label, where="post", color=_color(index))
    draw_actions(top, run.actions, max_labels=40)
    top.set_ylabel("utility")
    top.set_title(
        f"{len(names)} tiers on a {run.spec.worker_cores}-core Spark worker, policy henge: "
        f"{run.spec.top.name}'s input {run.spec.top.rate:g} -> {run.spec.top.spike_rate:g} "
        "rows/s (shaded)"
    )
    top.legend(loc="lower left", fontsize="x-small", ncol=3)
    for index, tier in enumerate(run.spec.tiers):
        color = _color(index)
        held = [s.spark[tier.name] for s in samples]
        target = [s.target[tier.name] for s in samples]
        bottom.step(minutes, held, where="post", color=color, label=f"{tier.name} in Spark")
        bottom.step(minutes, target, where="post", color=color, linestyle=":", linewidth=1.0)
    bottom.plot([], [], color="0.4", linestyle=":", label="target")
    bottom.axhline(run.spec.worker_cores, color="0.5", linestyle="--", linewidth=0.8)
    bottom.set_ylabel("executors")
    bottom.set_xlabel("minutes")
    bottom.legend(loc="upper left", fontsize="x-small", ncol=4)
    for axes in (top, bottom):
        axes.axvspan(run.spike_start_s / 60.0, run.spike_end_s / 60.0, color="0.92", zorder=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=110)
    return path


def _color(index: int) -> str:
    """A tier's colour on both axes (C0 is left out: it would look like the total)."""
    return f"C{index + 1}"
