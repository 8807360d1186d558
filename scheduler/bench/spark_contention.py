"""Priority contention on a real Spark cluster: tiers of streaming jobs competing for one worker.

A standalone master and one worker with fewer cores than the jobs need at the top tier's peak;
one ``pageload`` driver per tier (the henge-agent wheel in each, the generator source in
``sleep`` cost mode so that executors wait rather than burn this machine's cores); a real
``henge serve`` on Postgres running the product policy with the cluster view read from the
master. The top tier's input rises for ``spike_s``, then falls back. Every second the run
records what Spark reports (cores per application from the master) and what the registry says
(each job's target, utility and latency); at the end it reads the rounds and their actions.

The end-to-end test (``tests/spark/test_contention.py``) runs :data:`SHORT` and asserts on the
record; ``henge bench spark-contention`` runs :data:`LONG` and draws it.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from scheduler.bench.server import run_server
from scheduler.cluster.spark_standalone import SparkStandaloneCluster, cores_per_application
from scheduler.sim.types import ActionEvent
from scheduler.spark.apps import App, WaitFailed, checkpoint_dir, start_app, wait_for
from scheduler.spark.local_cluster import LocalCluster

SUB_WINDOW_S = 3.0
TRICKLE = 5.0
"""Rows per second a driver gets until it runs on its initial executors: enough to run batches,
which starts the executors' Python workers, and too few to leave a backlog behind."""
WARM_BATCHES = 3
"""Batches a driver runs on the trickle before it gets its input."""


@dataclass(frozen=True)
class Tier:
    """One tenant's job: its priority, latency objective, executor bounds and input."""

    name: str
    priority: float
    latency_slo_ms: float
    min: int
    max: int
    initial: int
    rate: float
    """Rows per second at base load."""
    spike_rate: float | None = None
    """Rows per second during the spike; None: the input does not change."""

    def job_spec(self, *, pinned: bool = False) -> dict[str, Any]:
        """What the tenant registers; ``pinned``: with its bounds at its initial count."""
        return {
            "name": self.name,
            "priority": self.priority,
            "slo": {"latency_ms": self.latency_slo_ms, "latency_stat": "mean"},
            "executors": self.executors(pinned=pinned),
            "actuator": "agent",
        }

    def executors(self, *, pinned: bool = False) -> dict[str, int]:
        low, high = (self.initial, self.initial) if pinned else (self.min, self.max)
        return {"initial": self.initial, "min": low, "max": high, "cores": 1, "memory_mb": 512}


@dataclass(frozen=True)
class ContentionSpec:
    tiers: tuple[Tier, ...]
    worker_cores: int
    """Cores of the one worker: fewer than the tiers need at the spike."""
    cost_us: float
    """Waiting per row in the executors (the generator's ``sleep`` mode)."""
    partitions: int
    """Tasks per batch: a job's parallelism (a multiple of the executor counts it may hold)."""
    trigger_s: float
    """Micro-batch trigger interval: a batch starts at most this often (back to back when it
    takes longer), which bounds the drivers' planning work on a small machine."""
    settle_s: float
    """Seconds of base load after every job runs on its initial executors, before the spike."""
    spike_s: float
    after_s: float
    """Seconds recorded after the spike ends (at the most, with ``end_once_back_s``)."""
    round_interval_s: float = 2.0
    window_s: float = 15.0
    policy_params: Mapping[str, Any] = field(default_factory=dict)
    start_timeout_s: float = 240.0
    end_once_back_s: float | None = None
    """When set, the recording after the spike stops this many seconds after every tier holds
    its initial executors again, in Spark and in the registry, instead of running on for the
    whole ``after_s``; a test needs no more."""

    @property
    def top(self) -> Tier:
        return max(self.tiers, key=lambda t: t.priority)

    @property
    def bottom(self) -> Tier:
        return min(self.tiers, key=lambda t: t.priority)


_TIERS = (
    Tier("gold", 90, 6000, min=1, max=2, initial=1, rate=30, spike_rate=120),
    Tier("silver", 50, 6000, min=1, max=2, initial=2, rate=120),
    Tier("bronze", 10, 6000, min=1, max=2, initial=2, rate=120),
)
_POLICY = {"stabilization_s": 20}

SHORT = ContentionSpec(
    _TIERS, worker_cores=5, cost_us=10_000, partitions=2, trigger_s=2,
    settle_s=10, spike_s=120, after_s=130, policy_params=_POLICY, end_once_back_s=5,
)  # fmt: skip
"""What the end-to-end test runs (4–5 minutes with start-up)."""
LONG = replace(SHORT, settle_s=120, spike_s=420, after_s=300, end_once_back_s=None)
"""What ``henge bench spark-contention`` runs."""


@dataclass(frozen=True)
class Sample:
    t_s: float
    """Seconds from the start of the settle phase."""
    spark: Mapping[str, int]
    """Cores (one per executor) each application holds, from the standalone master."""
    target: Mapping[str, int]
    utility: Mapping[str, float | None]
    latency_ms: Mapping[str, float | None]
    """Each job's latest measured latency (the last one when its latest report has none)."""


@dataclass(frozen=True)
class TimedRound:
    t_s: float
    number: int
    state: str
    action: str
    reason: str
    total_utility: float


@dataclass(frozen=True)
class ContentionRun:
    spec: ContentionSpec
    spike_start_s: float
    spike_end_s: float
    samples: tuple[Sample, ...]
    actions: tuple[ActionEvent, ...]
    rounds: tuple[TimedRound, ...]
    cores_after_stop: int
    """Cores the worker still had in use once every driver had stopped."""
    apps_after_stop: tuple[str, ...]

    def during(self, start_s: float, end_s: float) -> list[Sample]:
        return [s for s in self.samples if start_s <= s.t_s < end_s]

    def first(self, after_s: float, check: Callable[[Sample], bool]) -> Sample | None:
        return next((s for s in self.samples if s.t_s >= after_s and check(s)), None)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _app_args(spec: ContentionSpec, tier: Tier, master_url: str, control: Path) -> list[str]:
    return [
        "--master", master_url,
        "--source", "generator",
        "--control-file", str(control),
        "--rate", str(TRICKLE),
        "--cost-us", str(spec.cost_us),
        "--cost-mode", "sleep",
        "--partitions", str(spec.partitions),
        "--trigger-s", str(spec.trigger_s),
        "--no-aggregation",
        "--shuffle-partitions", "2",
        "--cores-max", str(tier.max),
        "--sub-window-s", str(SUB_WINDOW_S),
        "--min-executors", str(tier.min),
        "--max-executors", str(tier.max),
        "--initial-executors", str(tier.initial),
    ]  # fmt: skip


def _server_env(spec: ContentionSpec, cluster: LocalCluster) -> dict[str, str]:
    return {
        "HENGE_ROUND_INTERVAL_S": str(spec.round_interval_s),
        "HENGE_SUB_WINDOW_S": str(SUB_WINDOW_S),
        "HENGE_WINDOW_S": str(spec.window_s),
        "HENGE_STALE_AFTER_S": "30",
        "HENGE_RECOVERY_OBSERVE_S": "0",
        "HENGE_POLICY": "henge",
        "HENGE_POLICY_PARAMS": json.dumps(dict(spec.policy_params)),
        "HENGE_CLUSTER_VIEW": "spark-standalone",
        "HENGE_SPARK_MASTER_UI_URL": cluster.master_ui_url,
    }


def run_contention(
    spec: ContentionSpec,
    driver_python: Path,
    database_url: str,
    workdir: Path,
    progress: Callable[[str], None] = lambda _: None,
) -> ContentionRun:
    """Run ``spec`` end to end in ``workdir`` (logs, status files, checkpoints) and return what
    was recorded. ``database_url`` is an empty Postgres database (migrated here)."""
    # The drivers run from the repository's root: every path handed to them is absolute.
    workdir = workdir.absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = LocalCluster(workers=1, worker_cores=spec.worker_cores, worker_memory="4g")
    apps: list[App] = []
    with ExitStack() as stack:
        progress(f"starting a standalone cluster with {spec.worker_cores} cores")
        cluster.start()
        stack.callback(cluster.stop)
        server = stack.enter_context(
            run_server(database_url, env=_server_env(spec, cluster), keep_log=True)
        )
        stack.callback(lambda: shutil.move(server.log_path, workdir / "henge-serve.log"))
        http = stack.enter_context(httpx.Client(base_url=server.url, timeout=10))
        master = SparkStandaloneCluster(cluster.master_ui_url)
        ids = _register(http, server.admin_token, spec)
        as_admin = _bearer(server.admin_token)
        controls = {t.name: workdir / f"{t.name}-rate.json" for t in spec.tiers}
        try:
            progress("starting one driver per tier")
            for tier in spec.tiers:
                # A checkpoint of an earlier run would resume the query at its offsets.
                shutil.rmtree(checkpoint_dir(workdir, tier.name), ignore_errors=True)
                controls[tier.name].write_text(json.dumps({"rate": TRICKLE}))
                args = _app_args(spec, tier, cluster.master_url, controls[tier.name])
                args += ["--henge-url", server.url, "--job-id", ids[tier.name][0]]
                env = {"HENGE_AGENT_TOKEN": ids[tier.name][1]}
                apps.append(start_app("pageload", args, workdir, driver_python, tier.name, env))
            _start_inputs(spec, apps, master, controls)
            recorder = _Recorder(spec, master, http, as_admin, {n: i for n, (i, _) in ids.items()})
            progress("waiting for every tier to meet its SLO on its initial executors")
            recorder.record_until(
                "every tier meeting its SLO on its initial executors",
                lambda samples: settled(spec, samples), spec.start_timeout_s, apps,
            )  # fmt: skip
            progress("every tier's bounds from its initial count to its own")
            _unpin(http, as_admin, spec, ids)
            progress(f"base load for {spec.settle_s:.0f} s")
            recorder.record_for(spec.settle_s, apps)
            spike_start = recorder.now()
            top = spec.top
            progress(f"{top.name}'s input {top.rate:g} -> {top.spike_rate:g} rows/s")
            controls[top.name].write_text(json.dumps({"rate": top.spike_rate}))
            recorder.record_for(spec.spike_s, apps)
            spike_end = recorder.now()
            progress(f"{top.name}'s input back to {top.rate:g} rows/s")
            controls[top.name].write_text(json.dumps({"rate": top.rate}))
            recorder.record_after_spike(spike_end, apps)
        finally:
            for app in apps:
                app.stop()
        cores, names = _after_stop(master)
        actions, rounds = recorder.actions()
    return ContentionRun(
        spec, spike_start, spike_end, tuple(recorder.samples), actions, rounds, cores, names
    )


def _register(
    http: httpx.Client, admin_token: str, spec: ContentionSpec
) -> dict[str, tuple[str, str]]:
    """One tenant per tier; each job's id and agent token by tier name."""
    ids: dict[str, tuple[str, str]] = {}
    for tier in spec.tiers:
        tenant = http.post("/v1/tenants", json={"name": tier.name}, headers=_bearer(admin_token))
        tenant.raise_for_status()
        job = http.post(
            "/v1/jobs", json=tier.job_spec(pinned=True), headers=_bearer(tenant.json()["token"])
        )
        job.raise_for_status()
        ids[tier.name] = (job.json()["id"], job.json()["agent_token"])
    return ids


def _unpin(
    http: httpx.Client,
    headers: dict[str, str],
    spec: ContentionSpec,
    ids: Mapping[str, tuple[str, str]],
) -> None:
    """Give each job its own bounds. Each is registered with its bounds at its initial count:
    a driver's first batches on cold executors can miss the SLO, and a move made for them
    (an executor from the bottom tier) is only undone once the mover's surplus has lasted
    ``stabilization_s`` after its peak, which once kept the base load from settling for four
    minutes."""
    for tier in spec.tiers:
        job_id = ids[tier.name][0]
        answer = http.patch(f"/v1/jobs/{job_id}", json={"executors": tier.executors()},
                            headers=headers)  # fmt: skip
        answer.raise_for_status()
        if answer.json()["executors"]["target"] != tier.initial:
            raise RuntimeError(f"{tier.name}'s target moved with its bounds: {answer.json()}")


def _start_inputs(
    spec: ContentionSpec,
    apps: Sequence[App],
    master: SparkStandaloneCluster,
    controls: Mapping[str, Path],
) -> None:
    """Give each job its base input once its driver has run a few batches and Spark holds the
    executors the scheduler targets for it (its initial count: its bounds are pinned there);
    return when every job has it. The drivers start on a trickle: rows arriving at the base
    rate while executors start would make a backlog that only the start-up caused, and no input
    at all would leave the first real batches to start the Python workers (slow enough to miss
    the SLO)."""
    tiers = {t.name: t for t in spec.tiers}
    fed: set[str] = set()

    def feed() -> bool:
        held = cores_per_application(master.status())
        for app in apps:
            tier, status = tiers[app.name], app.status()
            if (
                app.name not in fed
                and (status.get("last_batch") or 0) >= WARM_BATCHES
                and status.get("executors") == status.get("target")
                and held.get(app.name) == status.get("target")
            ):
                controls[app.name].write_text(json.dumps({"rate": tier.rate}))
                fed.add(app.name)
        return len(fed) == len(apps)

    wait_for("every tier running on its target executors", feed, spec.start_timeout_s, apps)


def _after_stop(
    master: SparkStandaloneCluster, timeout_s: float = 60.0
) -> tuple[int, tuple[str, ...]]:
    """Cores still in use and applications still running on the master once the drivers have
    stopped (waits up to ``timeout_s`` for the master to see them go)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = master.status()
        used = sum(int(w.get("coresused") or 0) for w in status.get("workers") or ())
        names = tuple(sorted(cores_per_application(status)))
        if (used == 0 and not names) or time.monotonic() > deadline:
            return used, names
        time.sleep(1)


def carry_latest(
    before: Mapping[str, float | None] | None, now: Mapping[str, float | None]
) -> dict[str, float | None]:
    """``now``, with the value ``before`` where a job's latest report had none (a report window
    in which no batch finished has no latency)."""
    return {n: before.get(n) if v is None and before else v for n, v in now.items()}


SETTLED_S = 10.0
"""Seconds every tier must meet its SLO on its initial executors before the base load counts
as settled (the drivers' first batches are slow while executors warm up; the jobs' bounds hold
them at their initial counts meanwhile, :func:`_unpin`)."""


def first_back(spec: ContentionSpec, samples: Sequence[Sample]) -> Sample | None:
    """The first of ``samples`` in which every tier holds its initial executors, in Spark and
    in the registry."""
    return next(
        (
            s
            for s in samples
            if all(s.spark[t.name] == t.initial == s.target[t.name] for t in spec.tiers)
        ),
        None,
    )


def settled(spec: ContentionSpec, samples: Sequence[Sample]) -> bool:
    if not samples or samples[-1].t_s - samples[0].t_s < SETTLED_S:
        return False
    recent = [s for s in samples if s.t_s >= samples[-1].t_s - SETTLED_S]
    return all(
        s.spark[t.name] == t.initial and s.target[t.name] == t.initial and meets(s, t)
        for s in recent
        for t in spec.tiers
    )


class _Recorder:
    """Samples Spark and the registry once a second; reads the rounds at the end."""

    def __init__(
        self,
        spec: ContentionSpec,
        master: SparkStandaloneCluster,
        http: httpx.Client,
        headers: dict[str, str],
        ids: Mapping[str, str],
    ) -> None:
        self.spec, self.master, self.http, self.headers = spec, master, http, headers
        self.ids = ids
        self.names = {job_id: name for name, job_id in ids.items()}
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.samples: list[Sample] = []

    def now(self) -> float:
        return time.monotonic() - self.started

    def record_for(self, seconds: float, apps: Sequence[App]) -> None:
        end = self.now() + seconds
        self.record_until(f"{seconds:.0f} s", lambda _: self.now() >= end, seconds + 60, apps)

    def record_after_spike(self, spike_end: float, apps: Sequence[App]) -> None:
        """``after_s``, or with ``end_once_back_s`` until that long after every tier is back."""
        end = spike_end + self.spec.after_s
        linger = self.spec.end_once_back_s

        def done(samples: Sequence[Sample]) -> bool:
            if self.now() >= end:
                return True
            if linger is None:
                return False
            back = first_back(self.spec, [s for s in samples if s.t_s >= spike_end])
            return back is not None and self.now() >= back.t_s + linger

        self.record_until(f"{self.spec.after_s:.0f} s", done, self.spec.after_s + 60, apps)

    def record_until(
        self,
        what: str,
        done: Callable[[Sequence[Sample]], bool],
        timeout_s: float,
        apps: Sequence[App],
    ) -> None:
        """Sample once a second until ``done(samples)``; :class:`WaitFailed` after ``timeout_s``
        or when a driver exits."""
        deadline = self.now() + timeout_s
        while not done(self.samples):
            self.samples.append(self.sample())
            for app in apps:
                if not app.alive():
                    raise WaitFailed(f"{app.name} exited ({app.process.returncode}) while "
                                     f"recording {what}:\n{app.log_tail()}")  # fmt: skip
            if self.now() > deadline:
                raise WaitFailed(f"timed out after {timeout_s:.0f} s recording {what}; last "
                                 f"sample {self.samples[-1]}")  # fmt: skip
            time.sleep(max(0.0, 1.0 - (self.now() - self.samples[-1].t_s)))

    def sample(self) -> Sample:
        t = self.now()
        held = cores_per_application(self.master.status())
        jobs = {}
        for name, job_id in self.ids.items():
            jobs[name] = self.http.get(f"/v1/jobs/{job_id}", headers=self.headers).json()
        last = self.samples[-1] if self.samples else None
        return Sample(
            t_s=round(t, 2),
            spark={name: held.get(name, 0) for name in self.ids},
            target={name: int(job["executors"]["target"]) for name, job in jobs.items()},
            utility=carry_latest(last and last.utility, {n: j["utility"] for n, j in jobs.items()}),
            latency_ms=carry_latest(
                last and last.latency_ms, {n: j["latency_ms"] for n, j in jobs.items()}
            ),
        )

    def actions(self) -> tuple[tuple[ActionEvent, ...], tuple[TimedRound, ...]]:
        """Every round of the run and every action, timed on the recorder's clock."""
        listed = self.http.get("/v1/rounds", params={"limit": 10_000}, headers=self.headers)
        listed.raise_for_status()
        actions, rounds = [], []
        for r in listed.json():
            at = round(datetime.fromisoformat(r["started_at"]).timestamp() - self.started_wall, 2)
            rounds.append(
                TimedRound(at, r["number"], r["state"], r["action"], r["reason"],
                           r["total_utility"])
            )  # fmt: skip
            for a in r["actions"]:
                actions.append(
                    ActionEvent(
                        at, a["kind"], self.names.get(a["job_id"], "?"),
                        a["from_executors"], a["to_executors"], a["reason"],
                    )
                )  # fmt: skip
        return (
            tuple(sorted(actions, key=lambda a: (a.t_s, a.job))),
            tuple(sorted(rounds, key=lambda r: r.number)),
        )


def meets(sample: Sample, tier: Tier) -> bool:
    """The job's latest measured latency is within its objective."""
    latency = sample.latency_ms[tier.name]
    return latency is not None and latency <= tier.latency_slo_ms
