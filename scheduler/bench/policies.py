"""``henge bench``: scenarios × policies in the simulator, one table, every run's JSON, plots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from scheduler.core.policies.registry import available_policies
from scheduler.sim.run import run_scenario, scenario_names, write_outputs
from scheduler.sim.scenario_file import load_scenario
from scheduler.sim.types import SimResult

# Henge first, then the baselines, so tables read the same way every time.
POLICY_ORDER = (
    "henge", "henge-paper", "utilitarian", "static", "spark-dra", "dstream-ratio", "ds2", "dhalion"
)  # fmt: skip


def bench_policies(requested: Sequence[str] | None) -> list[str]:
    if requested:
        return list(requested)
    known = available_policies()
    return [p for p in POLICY_ORDER if p in known] + [p for p in known if p not in POLICY_ORDER]


def run_bench(
    scenarios: Sequence[str] | None,
    policies: Sequence[str] | None,
    seed: int,
    out_dir: Path,
    console: Console | None = None,
) -> Path:
    """Run every pair; return the path of the markdown table."""
    from scheduler.bench.table import compare_henge, markdown_table
    from scheduler.sim.plots import plot_cdf

    names, chosen = scenario_names(scenarios), bench_policies(policies)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    summaries: list[dict[str, object]] = []
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console or Console(stderr=True)) as bar:
        task = bar.add_task("bench", total=len(names) * len(chosen))
        for name in names:
            scenario = load_scenario(name)
            results: dict[str, SimResult] = {}
            for policy in chosen:
                bar.update(task, description=f"{scenario.name} / {policy}")
                result = run_scenario(scenario, policy, seed)
                stem = f"{scenario.name}--{policy}"
                written = write_outputs(
                    result, out_dir / "runs" / f"{stem}.json", out_dir / "plots" / f"{stem}.png"
                )
                summaries.append(written.summary)
                results[policy] = result
                bar.advance(task)
            plot_cdf(results, out_dir / "plots" / f"{scenario.name}--slo-cdf.png")
    table = out_dir / "results.md"
    table.write_text(
        f"# henge bench (seed {seed})\n\n{markdown_table(summaries)}\n\n"
        f"## henge against henge-paper\n\n{compare_henge(summaries)}\n"
    )
    (out_dir / "summaries.json").write_text(json.dumps(summaries, indent=2) + "\n")
    return table
