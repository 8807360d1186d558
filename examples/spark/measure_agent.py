"""Measure the agent on the local cluster: time from a new target to the executors registered in
Spark, and the agent's CPU cost in the driver per report.

    .venv/bin/python examples/spark/measure_agent.py --cycles 3 --cpu-seconds 120 --json out.json

It starts a local standalone cluster, a stand-in scheduler it steers, and the pageload example
(generator input). Resize latency: the target alternates low → high → low; for each change the
example's status file records when Spark's registered executors first equal the target (polled
every 0.2 s). CPU: the same job runs twice for ``--cpu-seconds``, with and without the agent;
the driver's CPU (its Python process and its JVM, from /proc) is compared and divided by the
reports sent; the agent's own thread CPU time per report is read from its counters.

The drivers run the agent as a tenant installs it: the henge-agent wheel, built from agent/ and
installed with PySpark and pyarrow into a virtualenv of their own in the work folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from scheduler.spark.driver_env import (  # noqa: E402
    build_agent_wheel,
    clean_environment,
    driver_environment,
)
from scheduler.spark.local_cluster import LocalCluster  # noqa: E402
from scheduler.testing.fake_api import FakeScheduler  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
        except OSError:
            continue
        for child in text.split():
            out.append(int(child))
            out.extend(_children(int(child)))
    return out


def _ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User + system CPU of the driver's Python process ``pid`` and of its descendants (the
    driver's JVM)."""
    return _ticks(pid) / TICKS, sum(_ticks(c) for c in _children(pid)) / TICKS


def start(
    python: Path, master: str, workdir: Path, name: str, extra: list[str]
) -> tuple[subprocess.Popen, Path]:
    status = workdir / f"{name}.json"
    log = open(workdir / f"{name}.log", "wb")  # noqa: SIM115 (kept open for the child)
    process = subprocess.Popen(
        [
            str(python), str(HERE / "pageload" / "app.py"),
            "--master", master, "--source", "generator", "--rate", "50", "--cost-us", "1000",
            "--partitions", "4", "--status-file", str(status),
            "--checkpoint", str(workdir / f"{name}-checkpoint"), *extra,
        ],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        env={**clean_environment(), "PYSPARK_PYTHON": str(python)},
    )  # fmt: skip
    return process, status


def read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def wait(check, timeout_s: float, what: str) -> dict:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()


def measure_resizes(args, python, cluster, fake, workdir, agent_args) -> dict:  # type: ignore[no-untyped-def]
    status_run = [*agent_args, "--duration-s", "1200"]
    process, status = start(python, cluster.master_url, workdir, "resize", status_run)
    try:
        wait(
            lambda: (
                read(status).get("executors") == args.low
                and (read(status).get("last_batch") or 0) >= 1
            ),
            240,
            "warm-up",
        )
        # Only the steered changes count (not the trim at start-up).
        warm = len(read(status).get("resizes") or [])
        for _ in range(args.cycles):
            for target in (args.high, args.low):
                fake.target = target
                seen = len(read(status).get("resizes") or [])
                wait(
                    lambda seen=seen: len(read(status).get("resizes") or []) > seen,
                    180,
                    f"{target} executors",
                )
        resizes = read(status)["resizes"][warm:]
    finally:
        stop(process)
    grow = [r["reached_s"] for r in resizes if r["to"] > r["from"]]
    shrink = [r["reached_s"] for r in resizes if r["to"] < r["from"]]
    for name, values in (("grow", grow), ("shrink", shrink)):
        if values:
            print(
                f"target -> registered, {name}: {values} s (median {statistics.median(values):.1f})"
            )
    return {"grow_s": grow, "shrink_s": shrink}


def measure_cpu(args, python, cluster, fake, workdir, agent_args) -> dict:  # type: ignore[no-untyped-def]
    """Alternate runs without and with the agent (``--cpu-reps`` pairs) and compare the driver's
    CPU over the same span."""
    fake.target = args.low
    runs: list[dict] = []
    # The same executors in both: the agent holds ``low``; without it, spark.cores.max does.
    plans = [("without", ["--cores-max", str(args.low)]), ("with", agent_args)] * args.cpu_reps
    for i, (label, extra) in enumerate(plans):
        proc, st = start(
            python,
            cluster.master_url,
            workdir,
            f"cpu-{i}-{label}",
            [*extra, "--duration-s", "3000"],
        )
        try:
            wait(lambda st=st: (read(st).get("last_batch") or 0) >= 5, 240, "warm-up")
            (py0, jvm0), t0 = cpu_seconds(proc.pid), time.monotonic()
            state0 = read(st)
            time.sleep(args.cpu_seconds)
            py1, jvm1 = cpu_seconds(proc.pid)
            state = read(st)
            agent = state.get("agent") or {}
            runs.append(
                {
                    "agent": label == "with",
                    "seconds": round(time.monotonic() - t0, 1),
                    "python_cpu_s": round(py1 - py0, 3),
                    "jvm_cpu_s": round(jvm1 - jvm0, 3),
                    "batches": (state.get("last_batch") or 0) - (state0.get("last_batch") or 0),
                    "reports": (agent.get("reports_sent") or 0)
                    - ((state0.get("agent") or {}).get("reports_sent") or 0),
                    "agent_thread_cpu_ms_per_report": agent.get("cpu_ms_per_report"),
                }
            )
        finally:
            stop(proc)
        print(runs[-1])

    def mean(key: str, with_agent: bool) -> float:
        return statistics.mean(r[key] for r in runs if r["agent"] == with_agent)

    reports = statistics.mean(r["reports"] for r in runs if r["agent"]) or 1
    extra_py = mean("python_cpu_s", True) - mean("python_cpu_s", False)
    extra_jvm = mean("jvm_cpu_s", True) - mean("jvm_cpu_s", False)
    summary = {
        "runs": runs,
        "python_extra_ms_per_report": round(extra_py * 1000 / reports, 2),
        "jvm_extra_ms_per_report": round(extra_jvm * 1000 / reports, 2),
        "agent_thread_cpu_ms_per_report": statistics.mean(
            r["agent_thread_cpu_ms_per_report"] for r in runs if r["agent"]
        ),
    }
    print(
        f"driver CPU per report with the agent (A/B over {args.cpu_reps} pair(s) of "
        f"{args.cpu_seconds:.0f} s): Python +{summary['python_extra_ms_per_report']} ms, "
        f"JVM +{summary['jvm_extra_ms_per_report']} ms; the agent's own thread "
        f"{summary['agent_thread_cpu_ms_per_report']:.2f} ms"
    )
    return summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cycles", type=int, default=3, help="low→high→low resize cycles")
    p.add_argument("--low", type=int, default=1)
    p.add_argument("--high", type=int, default=3)
    p.add_argument("--sub-window-s", type=float, default=2.0)
    p.add_argument("--cpu-seconds", type=float, default=120.0, help="0: skip the CPU runs")
    p.add_argument("--cpu-reps", type=int, default=2, help="pairs of runs without/with")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    results: dict = {"cycles": args.cycles, "low": args.low, "high": args.high}
    workdir = Path(tempfile.mkdtemp(prefix="henge-measure-"))
    wheel = build_agent_wheel(ROOT / "agent", workdir / "wheel")
    python = driver_environment(workdir / "driver-venv", wheel)
    fake = FakeScheduler(target=args.low).start()
    agent_args = [
        "--henge-url", fake.url, "--job-id", "measure", "--token", "hga_measure",
        "--sub-window-s", str(args.sub_window_s), "--min-executors", "1",
        "--max-executors", str(max(args.high, 1)), "--initial-executors", str(args.low),
    ]  # fmt: skip
    with LocalCluster(workers=1, worker_cores=max(4, args.high + 1), worker_memory="6g") as cluster:
        results.update(measure_resizes(args, python, cluster, fake, workdir, agent_args))
        if args.cpu_seconds > 0:
            results["cpu"] = measure_cpu(args, python, cluster, fake, workdir, agent_args)
    fake.stop()
    shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
