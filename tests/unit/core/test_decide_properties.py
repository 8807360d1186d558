"""Properties of decide() over random snapshots, for every registered policy."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.core.bounds import upper_bound
from scheduler.core.decide import CoreSettings, SchedulerState, decide
from scheduler.core.freshness import classify
from scheduler.core.model import (
    ClusterView,
    JobMetrics,
    JobStatus,
    JobView,
    NodeView,
    Plan,
    Snapshot,
)
from scheduler.core.policies.registry import available_policies
from scheduler.core.slo import SLO, LatencyStat

from .henge_builders import T0, apply

POLICIES = available_policies()


@st.composite
def nodes(draw: st.DrawFn, index: int) -> NodeView:
    cores = draw(st.sampled_from([4.0, 8.0, 16.0, 32.0]))
    return NodeView(
        name=f"n{index}",
        cores=cores,
        memory_mb=cores * 4096,
        cores_requested=draw(st.floats(0.0, cores)),
        memory_requested_mb=draw(st.floats(0.0, cores * 4096)),
        cpu_used=draw(st.none() | st.floats(0.0, cores * 1.2)),
        ready=draw(st.sampled_from([True, True, True, False])),
    )


@st.composite
def slos(draw: st.DrawFn) -> SLO:
    kind = draw(st.sampled_from(["juice", "latency", "hybrid"]))
    juice = draw(st.sampled_from([0.9, 1.0])) if kind != "latency" else None
    latency = draw(st.sampled_from([200.0, 1000.0, 5000.0])) if kind != "juice" else None
    return SLO(juice=juice, latency_ms=latency,
               latency_stat=draw(st.sampled_from(list(LatencyStat))))  # fmt: skip


@st.composite
def metrics(draw: st.DrawFn, priority: float, executors: int) -> JobMetrics:
    utility = draw(st.just(priority) | st.floats(0.0, priority))
    maybe = st.none() | st.floats(0.01, 1e5)
    return JobMetrics(
        utility=utility,
        juice=draw(st.none() | st.floats(0.0, 1.0)),
        latency_ms=draw(st.none() | st.floats(1.0, 1e5)),
        capacity=draw(st.floats(0.0, 1.0) | st.floats(0.3, 1.0) | st.none()),
        input_rate=draw(maybe),
        processed_rate=draw(maybe),
        backlog_rows=draw(st.none() | st.floats(0.0, 1e6)),
        max_parallelism=draw(st.none() | st.integers(1, 400)),
        busy_core_s=draw(st.none() | st.floats(0.0, 1e4)),
        mean_batch_s=draw(st.none() | st.floats(0.01, 60.0)),
        trigger_interval_s=draw(st.none() | st.floats(0.01, 60.0)),
        behind_fraction=draw(st.none() | st.floats(0.0, 1.0)),
        executors_reported=draw(st.none() | st.just(executors)),
        windows=draw(st.integers(0, 6)),
    )


@st.composite
def jobs(draw: st.DrawFn, index: int) -> JobView:
    priority = draw(st.sampled_from([1.0, 5.0, 10.0, 35.0]))
    low = draw(st.integers(0, 3))
    high = draw(st.integers(max(low, 1), 50))
    executors = draw(st.integers(low, high))
    status = draw(st.sampled_from([JobStatus.ADMITTED] * 4 + [JobStatus.QUEUED]))
    age = draw(st.floats(0.0, 25.0) | st.floats(0.0, 60.0) | st.none())
    reported = None if age is None else T0 - timedelta(seconds=age)
    has_metrics = status is JobStatus.ADMITTED and draw(st.integers(0, 5)) > 0
    return JobView(
        job_id=f"j{index:02d}",
        name=f"j{index}",
        tenant="t",
        priority=priority,
        slo=draw(slos()),
        status=status,
        executors=0 if status is JobStatus.QUEUED else executors,
        min_executors=low,
        max_executors=high,
        cores_per_executor=draw(st.integers(1, 4)),
        memory_mb=draw(st.sampled_from([512, 2048, 8192])),
        registered_at=T0 - timedelta(hours=1, seconds=index),
        last_report_at=reported,
        metrics=draw(metrics(priority, executors)) if has_metrics else None,
        restart_on_resize=draw(st.booleans()),
        initial_executors=executors if status is JobStatus.QUEUED else None,
    )


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    node_count = draw(st.integers(0, 5))
    job_count = draw(st.integers(0, 10))
    return Snapshot(
        round_number=1,
        jobs=tuple(draw(jobs(i)) for i in range(job_count)),
        cluster=ClusterView(tuple(draw(nodes(i)) for i in range(node_count))),
        taken_at=T0,
    )


def check_bounds(
    snapshot: Snapshot, plan: Plan, settings: CoreSettings, now: datetime = T0
) -> None:
    fresh = classify(snapshot.jobs, now, settings.stale_after_s)
    counted = {j.job_id: j for j in fresh.counted}
    queued = {j.job_id: j for j in snapshot.jobs if j.status is JobStatus.QUEUED}
    admitted = {a.job_id for a in plan.admissions if a.status is JobStatus.ADMITTED}
    free = snapshot.cluster.free_cores
    admitted_cores = 0.0
    grown = shrunk = 0.0
    for change in plan.changes:
        if change.job_id in admitted:
            job = queued[change.job_id]
            assert change.from_executors == 0
            assert job.min_executors <= change.to_executors <= job.max_executors
            admitted_cores += change.to_executors * job.cores_per_executor
            continue
        assert change.job_id in counted, "frozen, queued or unknown jobs are never touched"
        job = counted[change.job_id]
        assert change.from_executors == job.executors
        assert change.to_executors != change.from_executors
        assert change.to_executors >= job.min_executors
        if change.to_executors > job.executors:
            assert change.to_executors <= upper_bound(job)
            assert change.to_executors <= job.max_executors
            assert change.to_executors <= max(job.min_executors, job.useful_executors())
            grown += (change.to_executors - job.executors) * job.cores_per_executor
        else:
            shrunk += (job.executors - change.to_executors) * job.cores_per_executor
    # The priority rule may admit a job's minimum pending, when lower-priority jobs hold the
    # cores it needs above their own minimums.
    pending = 0.0
    if settings.admission == "priority" or settings.policy == "henge":
        pending = sum(
            queued[c.job_id].min_executors * queued[c.job_id].cores_per_executor
            for c in plan.changes
            if c.job_id in admitted
        )
    assert admitted_cores <= free + pending + 1e-6
    assert grown <= max(0.0, free - (admitted_cores - pending)) + shrunk + 1e-6
    assert set(plan.frozen_jobs) == {j.job_id for j in fresh.frozen}


def warm(snapshot: Snapshot, settings: CoreSettings) -> SchedulerState:
    """A state with one round behind it, 70 s ago (past the quiesce)."""
    earlier = T0 - timedelta(seconds=70)
    shifted = replace(
        snapshot,
        jobs=tuple(
            replace(j, last_report_at=j.last_report_at - timedelta(seconds=70))
            if j.last_report_at is not None
            else j
            for j in snapshot.jobs
        ),
        taken_at=earlier,
    )
    _, state = decide(shifted, SchedulerState.initial(settings), settings, earlier)
    return state


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(snapshots(), st.sampled_from(POLICIES))
def test_no_plan_exceeds_free_capacity_max_or_useful_parallelism_or_goes_below_min(
    snapshot: Snapshot, policy: str
) -> None:
    settings_ = CoreSettings(policy=policy)
    for state in (SchedulerState.initial(settings_), warm(snapshot, settings_)):
        plan, _ = decide(snapshot, state, settings_, T0)
        check_bounds(snapshot, plan, settings_)
        assert plan.reason


@SETTINGS
@given(snapshots(), st.sampled_from(POLICIES))
def test_decide_is_deterministic_for_equal_inputs(snapshot: Snapshot, policy: str) -> None:
    settings_ = CoreSettings(policy=policy)
    state = warm(snapshot, settings_)
    first = decide(snapshot, state, settings_, T0)
    again = decide(replace(snapshot), replace(state), CoreSettings(policy=policy), T0)
    assert first == again
    restored = SchedulerState.from_json(state.to_json())
    assert decide(snapshot, restored, settings_, T0) == first


def later(snapshot: Snapshot, seconds: float, factors: list[float]) -> Snapshot:
    """``snapshot`` ``seconds`` later, reports as recent as before, utilities scaled."""
    shift = timedelta(seconds=seconds)
    jobs = []
    for k, view in enumerate(snapshot.jobs):
        moved = view
        if view.last_report_at is not None:
            moved = replace(moved, last_report_at=view.last_report_at + shift)
        if view.metrics is not None and factors:
            scaled = min(view.priority, view.metrics.utility * factors[k % len(factors)])
            moved = replace(moved, metrics=replace(view.metrics, utility=scaled))
        jobs.append(moved)
    return replace(snapshot, jobs=tuple(jobs), taken_at=snapshot.taken_at + shift)


@SETTINGS
@given(snapshots(), st.lists(st.lists(st.floats(0.5, 2.0), max_size=4), min_size=12, max_size=12))
def test_henge_runs_stay_within_bounds(snapshot: Snapshot, noise: list[list[float]]) -> None:
    settings_ = CoreSettings(policy="henge", policy_params={"quiesce_s": 20.0})
    state = SchedulerState.initial(settings_)
    current = snapshot
    for k, factors in enumerate(noise):
        seen = later(current, 10.0 * k, factors)
        plan, state = decide(seen, state, settings_, seen.taken_at)
        check_bounds(seen, plan, settings_, seen.taken_at)
        assert SchedulerState.from_json(state.to_json()) == state
        current = replace(current, jobs=tuple(apply(current.jobs, plan)))
