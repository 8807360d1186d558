"""The round every per-job baseline shares (:class:`PerJobBaseline`), with a toy rule."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from scheduler.core.model import (
    ActionKind,
    ClusterState,
    ClusterView,
    JobStatus,
    JobView,
    NodeView,
    Snapshot,
)
from scheduler.core.policies.base import PerJobBaseline, Turn
from scheduler.core.policies.timers import epoch_s, per_job
from scheduler.core.slo import SLO

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class ToySettings:
    pass


@dataclass(frozen=True)
class ToyState:
    seen: Mapping[str, float] = per_job(float)
    last_round: float | None = None


class ToyPolicy(PerJobBaseline[ToySettings, ToyState, float]):
    """Grows every job by one executor; a job with no executors loses its timer."""

    name = "toy"
    settings_type = ToySettings
    state_type = ToyState
    quiet_reason = "toy: nothing to do"

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, float | None, float]] = []

    def timers(self, state: ToyState) -> Mapping[str, float]:
        return state.seen

    def previous_round(self, state: ToyState) -> float | None:
        return state.last_round

    def next_state(self, timers: dict[str, float], turn: Turn) -> ToyState:
        return ToyState(timers, turn.now_s)

    def decide_job(self, job: JobView, previous: float | None, turn: Turn) -> float | None:
        self.calls.append((job.job_id, previous, turn.evidence_from))
        if job.executors == 0:
            return None
        turn.log.change(job, turn.free.grant(job, job.executors + 1), "toy")
        return turn.now_s


def job(job_id: str, executors: int, registered_s: float) -> JobView:
    return JobView(
        job_id=job_id,
        name=f"job-{job_id}",
        tenant="t",
        priority=10.0,
        slo=SLO(juice=1.0),
        status=JobStatus.ADMITTED,
        executors=executors,
        min_executors=0,
        max_executors=40,
        cores_per_executor=1,
        memory_mb=1024,
        registered_at=T0 + timedelta(seconds=registered_s),
        last_report_at=T0,
        metrics=None,
    )


def snap(*jobs: JobView, free: float, frozen: tuple[str, ...] = ()) -> Snapshot:
    node = NodeView("n1", cores=free, memory_mb=1e9)
    return Snapshot(1, tuple(jobs), ClusterView((node,)), T0, frozen_jobs=frozen)


def test_jobs_are_decided_in_registration_order_sharing_the_free_cores() -> None:
    policy = ToyPolicy()
    later = job("a", 2, registered_s=5)
    first = job("b", 2, registered_s=0)
    plan, state = policy.decide(snap(later, first, free=1), policy.initial_state(), T0)
    assert [call[0] for call in policy.calls] == ["b", "a"]
    assert [(c.job_id, c.to_executors) for c in plan.changes] == [("b", 3), ("a", 2)]
    assert state == ToyState({"b": epoch_s(T0), "a": epoch_s(T0)}, epoch_s(T0))


def test_timers_carry_over_frozen_jobs_keep_theirs_and_none_drops_one() -> None:
    policy = ToyPolicy()
    previous = ToyState({"a": 1.0, "b": 2.0, "c": 3.0, "gone": 4.0}, last_round=100.0)
    now = T0 + timedelta(seconds=10)
    _, state = policy.decide(
        snap(job("a", 1, 0), job("b", 0, 1), free=8, frozen=("c",)), previous, now
    )
    assert policy.calls == [("a", 1.0, 100.0), ("b", 2.0, 100.0)]
    assert dict(state.seen) == {"a": epoch_s(now), "c": 3.0}
    assert state.last_round == epoch_s(now)


def test_evidence_dates_from_now_without_a_previous_round() -> None:
    policy = ToyPolicy()
    policy.decide(snap(job("a", 0, 0), free=8), policy.initial_state(), T0)
    assert policy.calls == [("a", None, epoch_s(T0))]


def test_a_round_without_remarks_gives_the_quiet_reason() -> None:
    policy = ToyPolicy()
    plan, _ = policy.decide(snap(job("a", 0, 0), free=8), policy.initial_state(), T0)
    assert plan.action is ActionKind.NONE
    assert plan.reason == "toy: nothing to do"
    assert plan.state is ClusterState.CONVERGED
    assert dataclasses.asdict(policy.initial_state()) == {"seen": {}, "last_round": None}
