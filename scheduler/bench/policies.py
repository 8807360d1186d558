"""``henge bench``: scenarios × policies × seeds in the simulator, the tables, every run's JSON,
plots.

Each run is deterministic, so running them in worker processes (``jobs`` > 1) gives the same
summaries as running them one after the other; the summaries are kept in the order of the runs,
not of their completion.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from scheduler.bench.table import base_policy
from scheduler.core.policies.registry import available_policies
from scheduler.sim.run import run_scenario, scenario_names, write_outputs
from scheduler.sim.scenario_file import load_scenario
from scheduler.sim.types import SimResult

# Henge first, then the baselines, so tables read the same way every time.
POLICY_ORDER = (
    "henge", "henge-paper", "utilitarian", "static", "spark-dra", "dstream-ratio", "ds2", "dhalion"
)  # fmt: skip
DEFAULT_SEEDS = (1, 2, 3)

PolicyParams = Mapping[str, Mapping[str, Any]]
"""Settings per policy name (or variant), for those run with other than their defaults."""


def bench_policies(requested: Sequence[str] | None) -> list[str]:
    if requested:
        return list(requested)
    known = available_policies()
    return [p for p in POLICY_ORDER if p in known] + [p for p in known if p not in POLICY_ORDER]


@dataclass(frozen=True)
class BenchRun:
    """One (scenario, policy, seed) of the bench."""

    source: str
    """The scenario as given: a built-in name or a YAML file."""
    scenario: str
    """Its name, for file names and tables."""
    policy: str
    """The policy, or a variant of it (``henge@wide``)."""
    seed: int
    plot: bool
    """Whether to draw its run plot and hand its result back for the scenario's CDF plot."""

    @property
    def stem(self) -> str:
        return f"{self.scenario}--{self.policy}--seed{self.seed}"


@dataclass(frozen=True)
class RunOutput:
    run: BenchRun
    summary: dict[str, Any]
    result: SimResult | None
    """The whole result, for the runs that are plotted (else ``None``: cheaper to send back)."""


def bench_runs(
    scenarios: Sequence[str], policies: Sequence[str], seeds: Sequence[int]
) -> list[BenchRun]:
    """Every (scenario, policy, seed), in table order; the first seed's runs are plotted."""
    names = {source: load_scenario(source).name for source in scenarios}
    return [
        BenchRun(source, names[source], policy, seed, plot=seed == seeds[0])
        for source in scenarios
        for policy in policies
        for seed in seeds
    ]


def execute(run: BenchRun, out_dir: Path, params: Mapping[str, Any] | None = None) -> RunOutput:
    """Run one (scenario, policy, seed) with the policy settings ``params`` (none: the
    policy's defaults) and write its JSON (and plot); a variant's JSON names it."""
    policy = base_policy(run.policy)
    result = run_scenario(load_scenario(run.source), policy, run.seed, policy_params=params)
    plot = out_dir / "plots" / f"{run.scenario}--{run.policy}.png" if run.plot else None
    variant = run.policy if run.policy != policy else None
    written = write_outputs(result, out_dir / "runs" / f"{run.stem}.json", plot, variant)
    return RunOutput(run, written.summary, result if run.plot else None)


def quiet_worker() -> None:
    """Set up a worker process's logging: warnings only."""
    from scheduler.logs import configure_logging

    configure_logging("warning", "console")  # one log line per round would drown the bar


def _outputs(
    runs: Sequence[BenchRun], out_dir: Path, jobs: int, params: PolicyParams
) -> Iterator[RunOutput]:
    """Each run's output as it completes: in this process for ``jobs`` = 1, else in a pool of
    ``jobs`` worker processes (started fresh, not forked from this one)."""
    if jobs <= 1:
        for run in runs:
            yield execute(run, out_dir, params.get(run.policy))
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=quiet_worker) as pool:
        futures: list[Future[RunOutput]] = [
            pool.submit(execute, r, out_dir, params.get(r.policy)) for r in runs
        ]
        for future in as_completed(futures):
            yield future.result()


def run_bench(
    scenarios: Sequence[str] | None,
    policies: Sequence[str] | None,
    seeds: Sequence[int],
    out_dir: Path,
    console: Console | None = None,
    jobs: int = 1,
    params: PolicyParams | None = None,
) -> Path:
    """Run every (scenario, policy, seed), ``jobs`` at a time, each policy named in ``params``
    with the settings given there (the others with their defaults); return the path of the
    markdown tables. Per-run JSON goes to ``runs/<scenario>--<policy>--seed<seed>.json``; the
    first seed's runs are plotted, with a CDF of SLO satisfaction per scenario."""
    from scheduler.bench.table import (
        compare_henge,
        leader_table,
        markdown_table,
        policy_matrix,
        tier_table,
    )
    from scheduler.sim.plots import plot_cdf

    chosen = bench_policies(policies)
    params = params or {}
    runs = bench_runs(scenario_names(scenarios), chosen, seeds)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    summaries: dict[BenchRun, dict[str, Any]] = {}
    plotted: dict[str, dict[str, SimResult]] = {}
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console or Console(stderr=True)) as bar:
        task = bar.add_task("bench", total=len(runs))
        for output in _outputs(runs, out_dir, jobs, params):
            run = output.run
            summaries[run] = output.summary
            if output.result is not None:
                plotted.setdefault(run.scenario, {})[run.policy] = output.result
                if len(plotted[run.scenario]) == len(chosen):
                    by_policy = {p: plotted[run.scenario][p] for p in chosen}
                    plot_cdf(by_policy, out_dir / "plots" / f"{run.scenario}--slo-cdf.png")
                    del plotted[run.scenario]
            bar.update(task, description=f"{run.scenario} / {run.policy} / seed {run.seed}")
            bar.advance(task)
    ordered = [summaries[run] for run in runs]
    seed_text = ",".join(str(s) for s in seeds)
    given = "".join(f"; {p} with {json.dumps(dict(params[p]))}" for p in chosen if params.get(p))
    table = out_dir / "results.md"
    table.write_text(
        f"# henge bench (seeds {seed_text}{given})\n\n"
        f"## henge against every other policy\n\n{leader_table(ordered)}\n"
        f"## Utility fraction by policy (mean over seeds)\n\n{policy_matrix(ordered)}\n"
        f"## Every policy\n\n{markdown_table(ordered)}\n"
        f"## SLO satisfaction per priority tier\n\n{tier_table(ordered)}\n"
        f"## henge against henge-paper (means over seeds)\n\n{compare_henge(ordered)}\n"
    )
    (out_dir / "summaries.json").write_text(json.dumps(ordered, indent=2) + "\n")
    return table
