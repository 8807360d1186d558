"""The simulator's built-in scenarios through the production loop (issue acceptance): the same
seed gives the same run, and Henge's behaviour in §2.9's experiments."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import statistics
import subprocess
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from scheduler.bench.policies import quiet_worker, run_bench
from scheduler.core.slo import meets_slo
from scheduler.sim.run import run_scenario
from scheduler.sim.scenario import JobScenario, Scenario
from scheduler.sim.scenario_file import SCENARIO_DIR, load_scenario
from scheduler.sim.summary import summarize
from scheduler.sim.types import SimResult
from scheduler.sim.world import build_world
from tests.serving import henge_command

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def without_wall_clock(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k != "wall"}


def test_same_scenario_policy_and_seed_give_identical_json():
    scenario = load_scenario("spike")
    first = summarize(run_scenario(scenario, "henge", seed=7))
    second = summarize(run_scenario(scenario, "henge", seed=7))
    assert json.dumps(without_wall_clock(first)) == json.dumps(without_wall_clock(second))
    other_seed = summarize(run_scenario(scenario, "henge", seed=8))
    assert without_wall_clock(other_seed) != without_wall_clock(first)  # the seed matters


def test_priority_greedy_reconfigures_in_priority_order_and_meets_every_slo_within_900_s():
    scenario = load_scenario("priority-greedy")
    result = run_scenario(scenario, "henge-paper", seed=1)
    first_touch: list[str] = []
    for action in result.actions:
        if action.kind == "reconfigure" and action.job not in first_touch:
            first_touch.append(action.job)
    priority = {spec.name: spec.priority for spec in result.jobs}
    assert len(first_touch) == 9
    assert [priority[name] for name in first_touch] == sorted(priority.values(), reverse=True)
    summary = summarize(result)
    assert summary["time_to_max_utility_s"] is not None
    assert summary["time_to_max_utility_s"] <= 900
    last = result.samples[-1]
    assert all(meets_slo(last.utilities[name], priority[name]) for name in priority)


def test_collector_outage_takes_no_action_observes_then_converges():
    scenario = load_scenario("collector-outage")
    result = run_scenario(scenario, "henge-paper", seed=1, oracle=False)
    outage_start = 1020 - scenario.scheduler_start_s
    outage_end = outage_start + 360
    observed_until = outage_end + 300  # recovery_observe_s, the paper's 5 minutes
    quiet = [a for a in result.actions if outage_start < a.t_s <= observed_until]
    assert quiet == [], quiet
    outage_rounds = [s for s in result.samples if s.reason.startswith("collector outage")]
    assert outage_rounds, "the outage was never noticed"
    assert all(outage_start < s.t_s <= outage_end + 10 for s in outage_rounds)
    assert any(s.reason.startswith("observing after a collector outage") for s in result.samples)
    assert any(a.t_s > observed_until for a in result.actions), "it never acted again"
    last = result.samples[-1]
    assert last.state == "converged" and last.total_utility == pytest.approx(last.max_utility)


def test_single_congested_blacklists_the_unattainable_slo_without_taking_the_cluster():
    scenario = load_scenario("single-congested")
    result = run_scenario(scenario, "henge-paper", seed=1, oracle=False)
    cluster_cores = sum(node.cores for node in scenario.cluster.nodes)
    for name in ("slo-800-1x", "slo-800-2x"):  # below the per-batch floor: never attainable
        touched = [a for a in result.actions if a.job == name and a.kind == "reconfigure"]
        assert 1 <= len(touched) <= 3, touched  # tried, then blacklisted (< 5 % gain)
        held = result.samples[-1].executors[name]
        assert held <= scenario.job(name).executors.max < cluster_cores / 2
    last = result.samples[-1]
    for name in ("slo-1200-1x", "slo-1400-1x"):  # attainable: they end meeting their SLO
        assert meets_slo(last.utilities[name], scenario.job(name).priority)


def _mean_satisfaction(result: SimResult) -> float:
    return float(summarize(result)["slo_satisfaction"]["mean"])


def _sized_for_median_load(scenario: Scenario) -> Scenario:
    """Static sized by hand: each job gets the smallest size that meets its SLO at the median of
    the load it sees over the run (from the world's true model), and keeps it."""
    world = build_world(scenario, scenario.seed)
    moments = [
        world.start + timedelta(seconds=t)
        for t in range(int(scenario.scheduler_start_s), int(scenario.duration_s), 1800)
    ]
    jobs = []
    for job in scenario.jobs:
        needs = [next((e for e in range(job.executors.min, job.executors.max + 1)
                       if meets_slo(world.true_utility(job.name, e, at), job.priority)),
                      job.executors.max) for at in moments]  # fmt: skip
        size = int(statistics.median(needs))
        jobs.append(dataclasses.replace(
            job, executors=dataclasses.replace(job.executors, initial=size)))  # fmt: skip
    return dataclasses.replace(scenario, jobs=tuple(jobs))


def _satisfaction(scenario: Scenario, policy: str) -> float:
    return _mean_satisfaction(run_scenario(scenario, policy, seed=1, oracle=False))


def test_diurnal_henge_paper_beats_static_at_initial_size_5x_and_static_sized_for_median():
    scenario = load_scenario("diurnal")
    # Three runs of three simulated days: two at a time, in fresh processes (the suite runs in
    # one process and would leave the second core idle for a minute and a half).
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context, initializer=quiet_worker) as pool:
        henge, initial, by_hand = pool.map(
            _satisfaction,
            [scenario, scenario, _sized_for_median_load(scenario)],
            ["henge-paper", "static", "static"],
        )
    assert henge >= 5 * initial, (henge, initial)
    assert henge >= by_hand, (henge, by_hand)


def test_a_job_admitted_with_its_executor_pending_gets_room_from_lower_priorities():
    """`crowd-and-spike`: `new-1` arrives in a full cluster, its one 4-core executor pending.
    Counted as held, that executor was growth nobody made room for, and the job earned nothing
    for 36 minutes, until the fillers gave back their surplus after `stabilization_s`."""
    scenario = load_scenario(str(EXAMPLES / "crowd-and-spike.yaml"))
    summary = summarize(run_scenario(scenario, "henge", seed=1))
    arrival = next(
        e for e in summary["events"] if e["kind"] == "arrival" and e["subject"] == ["new-1"]
    )
    assert arrival["tiers"]["30"] is not None and arrival["tiers"]["30"] <= 300, arrival
    new_1 = next(j for j in summary["jobs"] if j["name"] == "new-1")
    assert new_1["mean_utility_fraction"] >= 0.9, new_1
    assert summary["utility"]["oracle_fraction"] >= 0.95


def test_henge_sim_writes_the_design_json_a_plot_and_the_rounds(tmp_path: Path):
    out, plot, rounds = tmp_path / "run.json", tmp_path / "run.png", tmp_path / "rounds.jsonl"
    done = subprocess.run(  # noqa: PLW1510 - the exit code is asserted below
        [*henge_command(), "sim", "priority-greedy", "--policy", "henge", "--seed", "3",
         "--json", str(out), "--plot", str(plot), "--rounds", str(rounds)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    assert {"scenario", "policy", "seed", "sim_seconds", "utility", "slo_satisfaction",
            "time_to_max_utility_s", "rounds", "actions", "executor_core_hours",
            "jobs"} <= set(summary)  # fmt: skip
    assert summary["scenario"] == "priority-greedy" and summary["seed"] == 3
    assert set(summary["utility"]) >= {"integral", "max_integral", "fraction", "oracle_fraction"}
    assert len(summary["jobs"]) == 9
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = [json.loads(line) for line in rounds.read_text().splitlines()]
    acting = [r for r in lines if r["t_s"] >= 0]
    assert len(acting) == summary["rounds"]  # the summary counts the rounds the policy acted in
    assert [r["t_s"] for r in lines] == sorted(r["t_s"] for r in lines)
    names = {j["name"] for j in summary["jobs"]}
    for row in acting:
        assert set(row["executors"]) == set(row["utilities"]) == names
        assert row["reason"] and row["total_utility"] == pytest.approx(
            sum(row["utilities"].values()), abs=1e-6
        )
    assert any(r["action"] == "reconfigure" for r in acting)


def test_a_scenario_file_with_an_error_gets_one_line_naming_the_key(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\nduration_s: 3600\ncluster: {nodes: 2, cores: 8, memory_mb: 16384}\n"
        "jobs:\n  - name: a\n    tenant: t\n    priority: 10\n    slo: {juice: 1.0}\n"
        "    input: {constant: -5}\n"
    )
    command = [*henge_command(), "sim", str(bad)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "jobs[0].input.constant" in lines[0] and "Traceback" not in done.stderr


def _shortened(name: str, folder: Path, duration_s: float) -> Path:
    """A copy of a built-in scenario file that ends at ``duration_s``."""
    document = yaml.safe_load((SCENARIO_DIR / f"{name}.yaml").read_text())
    document["duration_s"] = duration_s
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _arrived_rows(scenario: Scenario, seed: int, seconds: float) -> list[float]:
    world = build_world(scenario, seed)
    reports = world.advance(world.start + timedelta(seconds=seconds))
    return [doc["sources"][0]["arrived_rows"] for _, doc in reports]


def _varying(scenario: Scenario, *, jitter: bool, bursts: bool) -> Scenario:
    """``scenario`` without noise, keeping only the chosen kinds of seed-dependent input."""

    def job(j: JobScenario) -> JobScenario:
        trace = j.input.trace
        if trace is not None and not jitter:
            trace = dataclasses.replace(trace, jitter_minutes=0)
        spec = dataclasses.replace(j.input, trace=trace, bursts=j.input.bursts if bursts else None)
        return dataclasses.replace(j, noise=0.0, input=spec)

    return dataclasses.replace(scenario, jobs=tuple(job(j) for j in scenario.jobs))


def test_seeds_vary_trace_offsets_and_bursts_and_the_same_seed_repeats() -> None:
    full = load_scenario("bursty")
    scenario = dataclasses.replace(full, duration_s=full.scheduler_start_s + 1800)
    first = summarize(run_scenario(scenario, "dhalion", seed=4))
    again = summarize(run_scenario(scenario, "dhalion", seed=4))
    assert json.dumps(without_wall_clock(first)) == json.dumps(without_wall_clock(again))
    # Without noise, the inputs differ between seeds through each kind of variation alone...
    for jitter, bursts in ((True, False), (False, True)):
        varied = _varying(scenario, jitter=jitter, bursts=bursts)
        assert _arrived_rows(varied, 4, 1800) != _arrived_rows(varied, 5, 1800)
    # ... and without either they do not.
    fixed = _varying(scenario, jitter=False, bursts=False)
    assert _arrived_rows(fixed, 4, 1800) == _arrived_rows(fixed, 5, 1800)


def test_bench_in_two_processes_gives_the_summaries_of_one(tmp_path: Path) -> None:
    scenarios = [str(_shortened(n, tmp_path, 1500)) for n in ("tiers-spike", "flash-crowd")]
    outputs = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs-{jobs}"
        table = run_bench(scenarios, ["henge"], [1, 2], out, console=Console(quiet=True), jobs=jobs)
        summaries = json.loads((out / "summaries.json").read_text())
        outputs[jobs] = ([without_wall_clock(s) for s in summaries], table.read_text())
        assert len(summaries) == 4
        assert sorted(p.name for p in (out / "runs").iterdir()) == [
            f"{n}--henge--seed{seed}.json"
            for n in ("flash-crowd", "tiers-spike")
            for seed in (1, 2)
        ]
    assert outputs[1] == outputs[2]
    table = outputs[2][1]
    assert "# henge bench (seeds 1,2)" in table and "SLO satisfaction per priority tier" in table


def test_bench_params_reach_only_the_policy_they_name(tmp_path: Path) -> None:
    scenario = str(_shortened("tiers-spike", tmp_path, 1500))
    settings = {"quiesce_s": 20.0, "backlog_debt": 0.0}
    out = tmp_path / "bench"
    table = run_bench([scenario], ["henge", "utilitarian"], [1], out,
                      console=Console(quiet=True), jobs=2, params={"henge": settings})  # fmt: skip
    runs = {p: json.loads((out / "runs" / f"tiers-spike--{p}--seed1.json").read_text())
            for p in ("henge", "utilitarian")}  # fmt: skip
    loaded = load_scenario(scenario)
    # The named policy runs as `henge sim --params` would run it, and not as with its defaults...
    given = summarize(run_scenario(loaded, "henge", 1, policy_params=settings))
    assert without_wall_clock(runs["henge"]) == without_wall_clock(given)
    assert runs["henge"]["policy_params"] == settings
    default = summarize(run_scenario(loaded, "henge", 1))
    assert default["policy_params"] == {}
    assert runs["henge"]["actions"] != default["actions"]
    # ... and the other one with its defaults.
    assert runs["utilitarian"]["policy_params"] == {}
    assert without_wall_clock(runs["utilitarian"]) == without_wall_clock(
        summarize(run_scenario(loaded, "utilitarian", 1))
    )
    assert '# henge bench (seeds 1; henge with {"quiesce_s": 20.0, "backlog_debt": 0.0})' in (
        table.read_text()
    )


def test_a_variant_runs_its_policy_with_its_own_settings_in_a_row_of_its_own(
    tmp_path: Path,
) -> None:
    scenario = str(_shortened("tiers-spike", tmp_path, 1500))
    settings = {"quiesce_s": 20.0, "backlog_debt": 0.0}
    out = tmp_path / "bench"
    table = run_bench([scenario], ["henge@fast", "utilitarian", "henge"], [1], out,
                      console=Console(quiet=True), params={"henge@fast": settings})  # fmt: skip
    runs = {p: json.loads((out / "runs" / f"tiers-spike--{p}--seed1.json").read_text())
            for p in ("henge", "henge@fast")}  # fmt: skip
    loaded = load_scenario(scenario)
    given = summarize(run_scenario(loaded, "henge", 1, policy_params=settings))
    assert without_wall_clock(runs["henge@fast"]) == {**without_wall_clock(given),
                                                      "variant": "henge@fast"}  # fmt: skip
    assert runs["henge@fast"]["policy"] == "henge"
    assert without_wall_clock(runs["henge"]) == without_wall_clock(
        summarize(run_scenario(loaded, "henge", 1))
    )
    assert "variant" not in runs["henge"]
    assert runs["henge@fast"]["actions"] != runs["henge"]["actions"]
    # One row each, the variant right after its policy, whatever the order asked.
    text = table.read_text()
    every = text.split("## Every policy", 1)[1]
    order = [line.split(" | ")[1] for line in every.splitlines()
             if line.startswith("| tiers-spike | ")]  # fmt: skip
    assert order[:3] == ["henge", "henge@fast", "utilitarian"], order
    # The summary tables first: henge against the others (its variant is none of them), and
    # a column per policy and variant.
    assert "| tiers-spike | " in text.split("## henge against every other policy", 1)[1]
    matrix = text.split("## Utility fraction by policy", 1)[1].splitlines()
    assert "| scenario | henge | henge@fast | utilitarian |" in matrix
    assert text.splitlines()[0] == (
        '# henge bench (seeds 1; henge@fast with {"quiesce_s": 20.0, "backlog_debt": 0.0})'
    )
    assert (out / "plots" / "tiers-spike--henge@fast.png").is_file()
