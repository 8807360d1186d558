"""``henge bench calibrate``: the real-Spark contention run against the simulator's model of it.

The simulator plays ``scheduler/sim/scenarios/real/spark-contention.yaml`` (the same tiers, input
schedule and scheduler settings as :data:`~scheduler.bench.spark_contention.LONG`, with the row
cost, batch overhead and executor start delay measured on real Spark) through the same loop and
``decide()``. Its rounds are turned into the record a real run makes (:class:`ContentionRun`),
so that both are summed up by the same :func:`~scheduler.bench.contention_report.job_figures`
and compared figure by figure.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from scheduler.bench.contention_report import JobFigures, job_figures, total_utility_fraction
from scheduler.bench.spark_contention import ContentionRun, ContentionSpec, Sample, Tier
from scheduler.core.slo import SLO, utility
from scheduler.sim.events import event_marks
from scheduler.sim.runner import RunSettings, simulate
from scheduler.sim.scenario import Scenario, Spike
from scheduler.sim.scenario_file import SCENARIO_DIR, load_scenario
from scheduler.sim.types import ActionEvent
from scheduler.sim.world import build_world

SCENARIO = SCENARIO_DIR / "real" / "spark-contention.yaml"
GOAL_TOTAL = 0.05
"""The simulated total utility fraction should be within this of the real one."""
GOAL_EXECUTORS = 1.0
"""Each job's time-weighted executors should be within this of the real run's."""
_SERVER = {"stale_after_s": 30.0, "recovery_observe_s": 0.0}
"""The real run's ``henge serve`` settings that are not the defaults (besides the windows)."""


def load_record(path: Path) -> ContentionRun:
    """A real run from the JSON record ``henge bench spark-contention`` writes."""
    data = json.loads(path.read_text())["run"]
    spec_data = dict(data["spec"])
    spec_data["tiers"] = tuple(Tier(**t) for t in spec_data["tiers"])
    return ContentionRun(
        spec=ContentionSpec(**spec_data),
        spike_start_s=data["spike_start_s"],
        spike_end_s=data["spike_end_s"],
        samples=tuple(Sample(**s) for s in data["samples"]),
        actions=tuple(ActionEvent(**a) for a in data["actions"]),
        rounds=(),
        cores_after_stop=data["cores_after_stop"],
        apps_after_stop=tuple(data["apps_after_stop"]),
    )


def from_settle(run: ContentionRun) -> ContentionRun:
    """``run`` from the start of its base load on: the drivers' warm-up left out and times
    shifted so that the base load starts at 0, as in a simulated run."""
    start = run.spike_start_s - run.spec.settle_s
    return replace(
        run,
        spike_start_s=run.spike_start_s - start,
        spike_end_s=run.spike_end_s - start,
        samples=tuple(replace(s, t_s=s.t_s - start) for s in run.samples if s.t_s >= start),
        actions=tuple(replace(a, t_s=a.t_s - start) for a in run.actions if a.t_s >= start),
    )


def by_latency(run: ContentionRun) -> ContentionRun:
    """``run`` with each sample's utilities taken from the jobs' latest measured latencies.

    On Spark the registry's newest 3-s report of a job whose batch outlasts it has no latency,
    and so no utility: the record shows 0 for it while the batch runs. The simulator's rounds see
    the 15-s window instead. Valued at the latest latency, both sides count the same thing."""
    slos = {t.name: (SLO(latency_ms=t.latency_slo_ms), t.priority) for t in run.spec.tiers}

    def valued(sample: Sample) -> Sample:
        utilities = {
            name: 0.0 if latency is None else utility(*slos[name], 1.0, latency)
            for name, latency in sample.latency_ms.items()
        }
        return replace(sample, utility=utilities)

    return replace(run, samples=tuple(valued(s) for s in run.samples))


def check_scenario(scenario: Scenario, spec: ContentionSpec) -> None:
    """Refuse a scenario that is not the real run's: other jobs, bounds, SLOs, inputs, cluster or
    timeline (the spike comes ``settle_s`` after the scheduler's start)."""
    problems: list[str] = []
    jobs = {j.name: j for j in scenario.jobs}
    if set(jobs) != {t.name for t in spec.tiers}:
        problems.append(f"jobs {sorted(jobs)} are not the tiers {[t.name for t in spec.tiers]}")
    for tier in spec.tiers:
        job = jobs.get(tier.name)
        if job is None:
            continue
        bounds = (job.executors.min, job.executors.max, job.executors.initial)
        if bounds != (tier.min, tier.max, tier.initial) or job.priority != tier.priority:
            problems.append(f"{tier.name}: priority or executor bounds differ")
        if job.slo.get("latency_ms") != tier.latency_slo_ms:
            problems.append(f"{tier.name}: latency SLO differs")
        if job.input.constant != tier.rate:
            problems.append(f"{tier.name}: its input is not a constant {tier.rate:g} rows/s")
    nodes = scenario.cluster.nodes
    if len(nodes) != 1 or nodes[0].cores != spec.worker_cores:
        problems.append("the cluster is not one worker of the real run's cores")
    spikes = [e for e in scenario.events if isinstance(e, Spike)]
    wanted = (scenario.scheduler_start_s + spec.settle_s, spec.spike_s, (spec.top.name,))
    top_factor = (spec.top.spike_rate or spec.top.rate) / spec.top.rate
    if len(spikes) != 1 or (spikes[0].at_s, spikes[0].duration_s, spikes[0].jobs) != wanted:
        problems.append("the spike is not the real run's (its job, start or length)")
    elif abs(spikes[0].factor - top_factor) > 1e-9:
        problems.append(f"the spike's factor is not {top_factor:g}")
    end = scenario.scheduler_start_s + spec.settle_s + spec.spike_s + spec.after_s
    if scenario.duration_s != end:
        problems.append(f"the scenario does not end {spec.after_s:g} s after the spike")
    if problems:
        raise ValueError(f"{scenario.name} is not the real run's scenario: {'; '.join(problems)}")


def simulated_run(spec: ContentionSpec, scenario: Scenario, seed: int = 1) -> ContentionRun:
    """``scenario`` in the simulator, recorded as a real run is: times count from the end of the
    warm-up (the scheduler's start), executors are what each job's agent reported."""
    check_scenario(scenario, spec)
    settings = RunSettings(
        duration_s=scenario.duration_s,
        scheduler_start_s=scenario.scheduler_start_s,
        sub_window_s=scenario.sub_window_s,
        round_interval_s=max(spec.round_interval_s, scenario.sub_window_s),
        window_s=spec.window_s,
    )
    result = simulate(
        build_world(scenario, seed),
        scenario=scenario.name,
        policy="henge",
        seed=seed,
        settings=settings,
        policy_params=dict(spec.policy_params),
        core_overrides=_SERVER,
        oracle=False,
        events=event_marks(scenario),
    )
    marks = {e.kind: e.t_s for e in result.events}
    samples = tuple(
        Sample(
            t_s=s.t_s,
            spark=dict(s.running),
            target=dict(s.executors),
            utility=dict(s.utilities),
            latency_ms=dict(s.latencies),
        )
        for s in result.samples
        if s.t_s >= 0
    )
    return ContentionRun(
        spec=spec,
        spike_start_s=marks["spike_start"],
        spike_end_s=marks["spike_end"],
        samples=samples,
        actions=tuple(a for a in result.actions if a.t_s >= 0),
        rounds=(),
        cores_after_stop=0,
        apps_after_stop=(),
    )


@dataclass(frozen=True)
class Comparison:
    """One job's figures (or the total's) on Spark and in the simulator."""

    job: str
    real: JobFigures
    simulated: JobFigures


def compare(real: ContentionRun, simulated: Sequence[ContentionRun]) -> dict[str, Any]:
    """Per job and in total: the real figures (from its base load on), the simulated ones
    (mean over the seeds) and whether the goals hold."""
    real = by_latency(from_settle(real))
    simulated = [by_latency(run) for run in simulated]
    real_figures = job_figures(real)
    sim_figures = [job_figures(run) for run in simulated]
    jobs: dict[str, Any] = {}
    for tier in real.spec.tiers:
        name = tier.name
        sim = _mean_figures([f[name] for f in sim_figures])
        jobs[name] = {
            "real": asdict(real_figures[name]),
            "simulated": asdict(sim),
            "executors_within_goal": abs(sim.executors - real_figures[name].executors)
            <= GOAL_EXECUTORS,
        }
    real_total = total_utility_fraction(real)
    sim_total = statistics.fmean(total_utility_fraction(run) for run in simulated)
    return {
        "jobs": jobs,
        "total_utility_fraction": {"real": real_total, "simulated": sim_total},
        "total_within_goal": abs(sim_total - real_total) <= GOAL_TOTAL,
        "seeds": len(simulated),
        "actions": {
            "real": len(real.actions),
            "simulated": statistics.fmean(len(run.actions) for run in simulated),
        },
    }


def _mean_figures(figures: Sequence[JobFigures]) -> JobFigures:
    latencies = [f.mean_latency_ms for f in figures if f.mean_latency_ms is not None]
    recovered = [f.slo_met_after_spike_s for f in figures]
    return JobFigures(
        utility_fraction=statistics.fmean(f.utility_fraction for f in figures),
        executors=statistics.fmean(f.executors for f in figures),
        mean_latency_ms=statistics.fmean(latencies) if latencies else None,
        slo_met_after_spike_s=(
            None
            if any(r is None for r in recovered)
            else statistics.fmean(r for r in recovered if r is not None)
        ),
    )


def calibrate(
    real: ContentionRun, seeds: Sequence[int], scenario_path: Path = SCENARIO
) -> dict[str, Any]:
    """The comparison of ``real`` with the simulated scenario over ``seeds``."""
    scenario = load_scenario(scenario_path)
    runs = [simulated_run(real.spec, scenario, seed) for seed in seeds]
    return compare(real, runs)


def rows(figures: Mapping[str, Any]) -> list[list[str]]:
    """The comparison as table rows: per job and figure, Spark, simulator and difference."""
    out: list[list[str]] = []
    labels = {
        "utility_fraction": ("utility fraction", "{:.3f}"),
        "executors": ("executors (time-weighted)", "{:.2f}"),
        "mean_latency_ms": ("mean latency (s)", "{:.1f}"),
        "slo_met_after_spike_s": ("SLO met again after the spike's start (s)", "{:.0f}"),
    }
    for name, job in figures["jobs"].items():
        for key, (label, fmt) in labels.items():
            real, sim = job["real"][key], job["simulated"][key]
            if key == "mean_latency_ms":
                real = None if real is None else real / 1000.0
                sim = None if sim is None else sim / 1000.0
            out.append(
                [name, label, _shown(real, fmt), _shown(sim, fmt), _difference(real, sim, fmt)]
            )
    total = figures["total_utility_fraction"]
    out.append(["total", "utility fraction", f"{total['real']:.3f}", f"{total['simulated']:.3f}",
                _difference(total["real"], total["simulated"], "{:+.3f}")])  # fmt: skip
    return out


def _shown(value: float | None, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def _difference(real: float | None, sim: float | None, fmt: str) -> str:
    if real is None or sim is None:
        return "–"
    signed = fmt if fmt.startswith("{:+") else fmt.replace("{:", "{:+", 1)
    return signed.format(sim - real)
