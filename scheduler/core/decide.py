"""The round's decision as one pure function: ``decide(snapshot, state, settings, now)``.

Steps applied for every policy (DESIGN §3):

1. Freshness: stale jobs and jobs that have not reported are frozen (not given to the policy,
   not counted, listed in ``plan.frozen_jobs``). If more than half of the admitted jobs are stale
   (a collector outage) the round takes no action, and once the outage is over the scheduler
   observes for ``recovery_observe_s`` before acting again.
2. Admission of queued jobs, by the policy's ``admission_rule`` and ``admission_tolerance``
   (see :mod:`admission`); the admitted jobs' executors are placed on the cluster the policy
   then sees.
3. The policy, on a snapshot holding only the counted jobs.
4. A safety clamp of every change (:mod:`safety`), and the round's total and maximum utility.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from scheduler.core.admission import AdmissionResult, AdmissionRule, admit
from scheduler.core.freshness import Freshness, classify
from scheduler.core.model import (
    ActionKind,
    Change,
    ClusterState,
    JobStatus,
    JobView,
    Plan,
    Snapshot,
)
from scheduler.core.policies.registry import get_policy
from scheduler.core.policy import JSONDict, Policy, PolicySettingsError
from scheduler.core.safety import clamp_changes


@dataclass(frozen=True)
class CoreSettings:
    """What ``decide`` needs besides the snapshot: the policy and the generic steps' settings."""

    policy: str = "henge"
    """Name of the scheduling policy (see ``available_policies()`` and docs/policies.md)."""
    policy_params: Mapping[str, Any] = field(default_factory=dict)
    """Overrides of the policy's own settings, by name."""
    stale_after_s: float = 30.0
    """A job whose last report is older than this is frozen (default: 3 sub-windows of 10 s)."""
    outage_fraction: float = 0.5
    """More than this fraction of the admitted jobs stale is a collector outage: no action."""
    recovery_observe_s: float = 300.0
    """After an outage, observe this long before acting again (5 min, as in the paper)."""
    admission: str = "policy"
    """Admission rule: ``policy`` (the policy's own: ``slos-met`` for Henge, ``fits`` for the
    baselines, ``priority`` for the product policy), or force ``slos-met``, ``fits`` or
    ``priority`` for every policy."""
    credit_shrinks: bool = True
    """Cores a plan takes from shrinking jobs count as free for the growing jobs of the same plan
    (a revert moves executors between jobs). Off: growth is bounded by today's free cores."""

    def __post_init__(self) -> None:
        if not self.stale_after_s > 0:
            raise PolicySettingsError("stale_after_s must be > 0")
        if not 0 <= self.outage_fraction < 1:
            raise PolicySettingsError("outage_fraction must be in [0, 1)")
        if self.recovery_observe_s < 0:
            raise PolicySettingsError("recovery_observe_s must be >= 0")
        # (a list, not a generator: the module is compiled, and mypyc builds a list anyway)
        if self.admission not in {"policy", *[r.value for r in AdmissionRule]}:
            raise PolicySettingsError("admission must be one of policy, slos-met, fits, priority")

    def build_policy(self) -> Policy[Any]:
        return get_policy(self.policy, self.policy_params)


@dataclass(frozen=True)
class SchedulerState:
    """What one round leaves for the next: the policy's own state and the outage bookkeeping."""

    policy: str
    """Name of the policy whose state this holds."""
    policy_state: Any
    """The policy's state object (serialised with the policy's ``dump_state``)."""
    cluster_state: ClusterState = ClusterState.NOT_CONVERGED
    """The state the last plan reported (kept for rounds the policy does not run)."""
    in_outage: bool = False
    """The last round saw a collector outage."""
    observe_until: datetime | None = None
    """No action before this time (observation after an outage)."""

    @staticmethod
    def initial(settings: CoreSettings) -> SchedulerState:
        policy = settings.build_policy()
        return SchedulerState(settings.policy, policy.initial_state())

    def to_json(self) -> JSONDict:
        """A JSON-compatible dict; :meth:`from_json` restores an equal state."""
        policy = get_policy(self.policy)
        return {
            "policy": self.policy,
            "policy_state": policy.dump_state(self.policy_state),
            "cluster_state": self.cluster_state.value,
            "in_outage": self.in_outage,
            "observe_until": _iso(self.observe_until),
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> SchedulerState:
        name = str(data["policy"])
        policy = get_policy(name)
        observe = data.get("observe_until")
        return SchedulerState(
            policy=name,
            policy_state=policy.load_state(dict(data.get("policy_state") or {})),
            cluster_state=ClusterState(data.get("cluster_state", ClusterState.NOT_CONVERGED)),
            in_outage=bool(data.get("in_outage", False)),
            observe_until=datetime.fromisoformat(observe) if observe else None,
        )


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def decide(
    snapshot: Snapshot, state: SchedulerState, settings: CoreSettings, now: datetime
) -> tuple[Plan, SchedulerState]:
    """One round: the plan to apply and the state to keep. Pure and deterministic."""
    policy = settings.build_policy()
    if state.policy != settings.policy:
        state = SchedulerState(
            settings.policy,
            policy.initial_state(),
            state.cluster_state,
            state.in_outage,
            state.observe_until,
        )

    fresh = classify(snapshot.jobs, now, settings.stale_after_s)
    frozen_ids = tuple(j.job_id for j in fresh.frozen)
    total = sum(j.utility for j in fresh.counted)
    maximum = sum(j.priority for j in fresh.counted)

    def idle(reason: str, new_state: SchedulerState) -> tuple[Plan, SchedulerState]:
        plan = Plan(
            ActionKind.NONE,
            reason,
            new_state.cluster_state,
            total_utility=total,
            max_utility=maximum,
            frozen_jobs=frozen_ids,
        )
        return plan, new_state

    if fresh.outage(settings.outage_fraction):
        reason = (
            f"collector outage: {len(fresh.stale)} of {fresh.admitted} jobs have no report "
            f"for {settings.stale_after_s:g} s; no action"
        )
        return idle(reason, dataclasses.replace(state, in_outage=True, observe_until=None))
    if state.in_outage:
        until = now + timedelta(seconds=settings.recovery_observe_s)
        state = dataclasses.replace(state, in_outage=False, observe_until=until)
    if state.observe_until is not None:
        if now < state.observe_until:
            left = (state.observe_until - now).total_seconds()
            return idle(f"observing after a collector outage ({left:.0f} s left)", state)
        state = dataclasses.replace(state, observe_until=None)

    admitted = _admissions(snapshot, fresh, policy, settings)
    view = Snapshot(
        round_number=snapshot.round_number,
        jobs=fresh.counted,
        cluster=admitted.cluster,
        taken_at=snapshot.taken_at,
        frozen_jobs=frozen_ids,
        can_replace=snapshot.can_replace,
    )
    plan, policy_state = policy.decide(view, state.policy_state, now)

    jobs = {j.job_id: j for j in fresh.counted}
    changes = clamp_changes(
        [*plan.changes, *_to_minimum(fresh.counted, plan)],
        jobs,
        admitted.cluster,
        credit_shrinks=settings.credit_shrinks,
    )
    action, reason = plan.action, plan.reason
    if action is ActionKind.NONE and changes:
        by_name = {j.job_id: j.name for j in fresh.counted}
        names = ", ".join(by_name[c.job_id] for c in changes)
        action, reason = ActionKind.RECONFIGURE, f"{names} raised to its minimum; {reason}"
    if admitted.changes and action is ActionKind.NONE:
        by_id = {j.job_id: j.name for j in snapshot.jobs}
        names = ", ".join(by_id.get(c.job_id, c.job_id) for c in admitted.changes)
        action, reason = ActionKind.ADMIT, f"admitted {names}; {plan.reason}"
    final = dataclasses.replace(
        plan,
        action=action,
        reason=reason,
        changes=admitted.changes + changes,
        admissions=admitted.admissions,
        total_utility=total,
        max_utility=maximum,
        frozen_jobs=frozen_ids,
    )
    new_state = dataclasses.replace(state, policy_state=policy_state, cluster_state=plan.state)
    return final, new_state


def _to_minimum(jobs: Sequence[JobView], plan: Plan) -> list[Change]:
    """Jobs below their minimum (raised by their tenant) that the plan leaves alone go to it;
    the safety clamp lets them grow only as far as the cluster has room."""
    planned = {c.job_id for c in plan.changes}
    return [
        Change(j.job_id, j.executors, j.min_executors, "raised to its minimum")
        for j in jobs
        if j.executors < j.min_executors and j.job_id not in planned
    ]


def _admissions(
    snapshot: Snapshot, fresh: Freshness, policy: Policy[Any], settings: CoreSettings
) -> AdmissionResult:
    queued = [j for j in snapshot.jobs if j.status is JobStatus.QUEUED]
    if settings.admission == "policy":
        rule = AdmissionRule(getattr(policy, "admission_rule", AdmissionRule.FITS))
    else:
        rule = AdmissionRule(settings.admission)
    tolerance = float(getattr(policy, "admission_tolerance", 0.0))
    return admit(queued, fresh.counted, fresh.warming, snapshot.cluster, rule, tolerance)
