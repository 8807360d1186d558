"""Henge's state machine (DESIGN §3, thesis §2.6) as a policy: ``henge-paper`` and ``henge``.

One round, for the whole cluster, on the jobs ``decide`` counted (fresh, with metrics):

0. Housekeeping: expired blacklist entries go; reduction marks are cleared by external changes
   (a different set of admitted jobs clears all; a job whose input rate moved by more than
   ``rate_change`` since its reduction loses its mark); ``henge`` folds the round's windows into
   the per-job models.
1. Quiesce: within ``quiesce_s`` of the last action, nothing else happens.
2. The configuration in force, once settled after an action, is recorded in the history.
3. Judge the last action. A reconfiguration: if the job's utility rose by less than ``min_gain``
   of its priority and it still misses its SLO, blacklist it for ``blacklist_ttl_s`` (the
   change is kept). If the total utility (over the jobs counted both then and now) dropped:
   ``reduce`` when (a) the cluster is congested for the job's executor size, (b) some job meets
   its SLO and (c) no reduction mark is held; otherwise ``revert``. A reduce right after a
   reduce that did not raise the utility fraction is a lockout: ``revert`` instead.
   (``henge``) A give-back after which the job misses its SLO is undone.
4. ``converged``: the reference utility fraction is captured once settled; a drop by more than
   ``converged_drop`` forgets the history (reversion targets and reduction marks) and goes to
   ``not_converged``. (``henge``) a newcomer missing its SLO also wakes the cluster, and a
   job with executors it does not need gives some back.
5. ``not_converged``: with every SLO met, count ``settle_rounds`` settled rounds, then go to
   ``converged``. Otherwise reconfigure: candidates are the jobs missing their SLO that are not
   blacklisted, by priority descending then lower utility; the head grows by the sizing rule,
   bounded by its upper bound and the free cores, each executor whole on one node. When not one
   executor of it fits, the cluster counts as congested: ``reduce`` if (b) and (c) hold, else
   the next candidate.

Every round returns one action, ``none`` with the reason when nothing is done.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from scheduler.core.admission import AdmissionRule
from scheduler.core.bounds import executors_that_fit, upper_bound
from scheduler.core.cluster import cluster_congested, room_for
from scheduler.core.model import ActionKind, Change, ClusterState, JobView, Plan, Snapshot
from scheduler.core.policies.henge import state as henge_state
from scheduler.core.policies.henge.model import JobModel, observe, usable
from scheduler.core.policies.henge.settings import PRODUCT_DEFAULTS, HengeSettings
from scheduler.core.policies.henge.sizing import Sizing, model_need, model_target, paper_target
from scheduler.core.policies.henge.state import Configuration, HengeState, LastAction, Step
from scheduler.core.policy import JSONDict, build_settings
from scheduler.core.slo import meets_slo

PAPER = "henge-paper"
PRODUCT = "henge"
_EPS = 1e-9
_PASSED_SHOWN = 3


class HengePolicy:
    """Henge's state machine; the settings pick ``henge-paper`` or ``henge`` behaviour."""

    admission_rule = AdmissionRule.SLOS_MET

    def __init__(self, name: str, settings: HengeSettings) -> None:
        self.name = name
        self.settings = settings

    def initial_state(self) -> HengeState:
        return HengeState()

    def decide(
        self, snapshot: Snapshot, state: HengeState, now: datetime
    ) -> tuple[Plan, HengeState]:
        round_ = _Round(self.settings, snapshot, state, now)
        plan = round_.run()
        return plan, round_.state

    def dump_state(self, state: HengeState) -> JSONDict:
        return henge_state.dump(state)

    def load_state(self, data: JSONDict) -> HengeState:
        return henge_state.load(data)


class _Round:
    """One round's working memory; ``state`` ends as the state for the next round."""

    def __init__(
        self, settings: HengeSettings, snapshot: Snapshot, state: HengeState, now: datetime
    ) -> None:
        self.s = settings
        self.snapshot = snapshot
        self.state = state
        self.now = now
        self.jobs = snapshot.jobs
        self.by_id = {j.job_id: j for j in self.jobs}
        self.utilities: dict[str, float] = {}
        self.missing: list[JobView] = []
        """Jobs missing their SLO, in snapshot order."""
        for job in self.jobs:
            value = job.utility
            self.utilities[job.job_id] = value
            if not meets_slo(value, job.priority):
                self.missing.append(job)
        self.missing_ids = {j.job_id for j in self.missing}
        self.total = sum(self.utilities.values())
        self.maximum = sum(j.priority for j in self.jobs)
        self.notes: list[str] = []

    # -- helpers ---------------------------------------------------------------------------

    @property
    def fraction(self) -> float:
        return self.total / self.maximum if self.maximum > 0 else 1.0

    def meets(self, job: JobView) -> bool:
        """Whether a job of this round meets its SLO."""
        return job.job_id not in self.missing_ids

    @property
    def some_met(self) -> bool:
        return len(self.missing) < len(self.jobs)

    def update(self, **changes: Any) -> None:
        self.state = dataclasses.replace(self.state, **changes)

    def later(self, seconds: float) -> datetime:
        return self.now + timedelta(seconds=seconds)

    def reason(self, text: str) -> str:
        return "; ".join([*self.notes, text])

    def none(self, text: str) -> Plan:
        return Plan.no_change(self.reason(text), self.state.cluster_state, self.total, self.maximum)

    def plan(
        self, action: ActionKind, text: str, changes: list[Change], job_id: str | None = None
    ) -> Plan:
        return Plan(
            action,
            self.reason(text),
            self.state.cluster_state,
            job_id=job_id,
            changes=tuple(changes),
            total_utility=self.total,
            max_utility=self.maximum,
        )

    def acted(
        self,
        step: Step,
        changes: list[Change],
        job: JobView | None = None,
        utilities_before: Mapping[str, float] | None = None,
    ) -> None:
        since = self.state.actions_since_reduce
        self.update(
            last_action=LastAction(
                step=step,
                at=self.now,
                job_id=job.job_id if job is not None else None,
                utilities_before=dict(utilities_before or {}),
                executors_before={c.job_id: c.from_executors for c in changes},
                executor_cores=job.cores_per_executor if job is not None else 1,
                executor_memory_mb=job.memory_mb if job is not None else 0,
                judged=step not in (Step.RECONFIGURE, Step.GIVE_BACK),
            ),
            record_due=True,
            settle_count=0,
            actions_since_reduce=0
            if step is Step.REDUCE
            else (None if since is None else since + 1),
        )

    # -- the round ---------------------------------------------------------------------------

    def run(self) -> Plan:
        self.housekeeping()
        last = self.state.last_action
        if last is not None:
            ready_at = last.at + timedelta(seconds=self.s.quiesce_s)
            if self.now < ready_at:
                left = (ready_at - self.now).total_seconds()
                return self.none(f"waiting for quiesce ({left:.0f} s left after {last.step})")
        self.record_if_due()
        if last is not None and not last.judged:
            judged = self.judge(last)
            if judged is not None:
                return judged
        if self.state.cluster_state is ClusterState.CONVERGED:
            return self.converged()
        return self.not_converged()

    def housekeeping(self) -> None:
        st = self.state
        now = self.now
        if any(t <= now for t in st.blacklist.values()):
            self.update(blacklist={k: t for k, t in st.blacklist.items() if t > now})
        if any(t <= now for t in st.give_back_blacklist.values()):
            self.update(
                give_back_blacklist={k: t for k, t in st.give_back_blacklist.items() if t > now}
            )
        if st.reduced:
            self.external_changes()
        if self.s.uses_model:
            self.fold_models()

    def external_changes(self) -> None:
        st = self.state
        admitted = frozenset(self.by_id).union(self.snapshot.frozen_jobs)
        if admitted != st.reduced_jobs:
            self.notes.append("set of jobs changed: reduction marks cleared")
            self.update(reduced={}, reduced_jobs=frozenset())
            return
        kept: dict[str, float | None] = {}
        for job_id, then in st.reduced.items():
            job = self.by_id.get(job_id)
            rate = job.metrics.input_rate if job is not None and job.metrics else None
            if (
                then is not None
                and rate is not None
                and abs(rate - then) > self.s.rate_change * then
            ):
                self.notes.append(f"input rate of {job_id} moved: its reduction mark cleared")
                continue
            kept[job_id] = then
        if len(kept) != len(st.reduced):
            self.update(reduced=kept, reduced_jobs=st.reduced_jobs if kept else frozenset())

    def fold_models(self) -> None:
        old = self.state.models
        alpha = self.s.model_alpha
        models: dict[str, JobModel] = {}
        for job in self.jobs:
            model = observe(old.get(job.job_id), job, alpha)
            if model is not None:
                models[job.job_id] = model
        for job_id in self.snapshot.frozen_jobs:
            frozen = old.get(job_id)
            if frozen is not None:
                models[job_id] = frozen
        self.update(models=models)

    def record_if_due(self) -> None:
        st = self.state
        if not st.record_due or not self.jobs:
            return
        config = Configuration(
            at=self.now,
            allocations={j.job_id: j.executors for j in self.jobs},
            total_utility=self.total,
            max_utility=self.maximum,
        )
        history = list(st.history)
        if history and history[-1].allocations == config.allocations:
            history[-1] = config
        else:
            history.append(config)
        while len(history) > self.s.history_size:
            best = _best_index(history)
            del history[1 if best == 0 else 0]
        self.update(history=tuple(history), record_due=False)

    # -- judging -------------------------------------------------------------------------------

    def judge(self, last: LastAction) -> Plan | None:
        self.update(last_action=dataclasses.replace(last, judged=True))
        if last.step is Step.GIVE_BACK:
            return self.judge_give_back(last)
        return self.judge_reconfigure(last)

    def judge_reconfigure(self, last: LastAction) -> Plan | None:
        before = last.utilities_before
        job = self.by_id.get(last.job_id or "")
        if job is not None and job.job_id in before:
            gain = (job.utility - before[job.job_id]) / job.priority
            if gain < self.s.min_gain and not self.meets(job):
                expiry = self.later(self.s.blacklist_ttl_s)
                self.update(blacklist={**self.state.blacklist, job.job_id: expiry})
                self.notes.append(
                    f"{job.name} gained {gain:.1%} < {self.s.min_gain:.0%}: blacklisted"
                )
        common = [j for j in self.jobs if j.job_id in before]
        then = sum(before[j.job_id] for j in common)
        after = sum(self.utilities[j.job_id] for j in common)
        scale = sum(j.priority for j in common)
        if after < then - self.s.drop_tolerance * scale - _EPS * max(1.0, scale):
            self.notes.append(f"total utility fell from {then:.4g} to {after:.4g}")
            return self.after_drop(last)
        return None

    def after_drop(self, last: LastAction) -> Plan:
        congested = cluster_congested(
            self.snapshot.cluster, last.executor_cores, last.executor_memory_mb
        )
        some_met = self.some_met
        unreduced = not self.state.reduced
        if congested and some_met and unreduced:
            if self.lockout():
                return self.revert("lockout: a second reduce right after one that did not help")
            reduced = self.reduce("cluster congested after the reconfiguration")
            if reduced is not None:
                return reduced
            return self.revert("no job can be reduced")
        why = ", ".join(
            text
            for ok, text in (
                (congested, "cluster not congested"),
                (some_met, "no job meets its SLO"),
                (unreduced, "a reduction is in the history"),
            )
            if not ok
        )
        return self.revert(f"no reduce ({why})")

    def lockout(self) -> bool:
        st = self.state
        return (
            st.actions_since_reduce is not None
            and st.actions_since_reduce <= 1
            and st.reduce_fraction_before is not None
            and self.fraction <= st.reduce_fraction_before + _EPS
        )

    def judge_give_back(self, last: LastAction) -> Plan | None:
        job = self.by_id.get(last.job_id or "")
        if job is None or self.meets(job):
            return None
        previous = last.executors_before.get(job.job_id)
        if previous is None or previous <= job.executors:
            return None
        expiry = self.later(self.s.blacklist_ttl_s)
        self.update(give_back_blacklist={**self.state.give_back_blacklist, job.job_id: expiry})
        change = Change(job.job_id, job.executors, previous, "undo give-back")
        self.acted(Step.UNDO_GIVE_BACK, [change], job)
        return self.plan(
            ActionKind.RECONFIGURE,
            f"{job.name} misses its SLO after giving back: {job.executors}→{previous}",
            [change],
            job.job_id,
        )

    # -- reduce and revert --------------------------------------------------------------------

    def reduce(self, why: str) -> Plan | None:
        """Cut every SLO-meeting, uncongested, unmarked job; ``None`` if no job can be cut."""
        marks = dict(self.state.reduced)
        changes: list[Change] = []
        keep = 1 - self.s.reduction_fraction
        for job in self.jobs:
            if job.job_id in marks or not self.meets(job) or job.metrics is None:
                continue
            capacity = job.metrics.capacity
            if capacity is None or capacity > self.s.capacity_threshold:
                continue
            target = max(job.min_executors, math.ceil(job.executors * keep - _EPS))
            if target >= job.executors:
                continue
            changes.append(Change(job.job_id, job.executors, target, "reduce"))
            marks[job.job_id] = job.metrics.input_rate
        if not changes:
            return None
        admitted = frozenset(self.by_id).union(self.snapshot.frozen_jobs)
        self.update(
            reduced=marks,
            reduced_jobs=admitted,
            reduce_fraction_before=self.fraction,
            cluster_state=ClusterState.NOT_CONVERGED,
        )
        self.acted(Step.REDUCE, changes)
        return self.plan(
            ActionKind.REDUCE,
            f"{why}: reduce {len(changes)} job(s) by {self.s.reduction_fraction:.0%}",
            changes,
        )

    def revert(self, why: str) -> Plan:
        history = self.state.history
        changes: list[Change] = []
        text = f"{why}: revert"
        if history:
            best = history[_best_index(list(history))]
            for job in self.jobs:
                target = best.allocations.get(job.job_id)
                if target is not None and target != job.executors:
                    changes.append(Change(job.job_id, job.executors, target, "revert"))
            text = (
                f"{why}: revert to the configuration of {best.at.isoformat()} "
                f"(utility {best.total_utility:.4g} of {best.max_utility:.4g})"
            )
        self.update(
            cluster_state=ClusterState.CONVERGED,
            converged_fraction=None,
            converged_jobs=frozenset(),
        )
        self.acted(Step.REVERT, changes)
        return self.plan(ActionKind.REVERT, text, changes)

    # -- the two states -------------------------------------------------------------------------

    def converged(self) -> Plan:
        st = self.state
        if st.converged_fraction is None:
            self.update(converged_fraction=self.fraction, converged_jobs=frozenset(self.by_id))
            return self.none(f"converged (utility fraction {self.fraction:.3f})")
        # "A drop of more than 5 %" is relative to the utility the cluster converged at.
        if self.fraction < st.converged_fraction * (1 - self.s.converged_drop):
            self.notes.append(
                f"utility fraction fell from {st.converged_fraction:.3f} to "
                f"{self.fraction:.3f}: history forgotten"
            )
            self.forget()
            return self.not_converged()
        if self.s.wake_on_new_job:
            newcomer = next(
                (
                    j
                    for j in self.missing
                    if j.job_id not in st.converged_jobs and j.job_id not in st.blacklist
                ),
                None,
            )
            if newcomer is not None:
                self.notes.append(f"new job {newcomer.name} misses its SLO")
                self.update(
                    cluster_state=ClusterState.NOT_CONVERGED,
                    converged_fraction=None,
                    converged_jobs=frozenset(),
                    settle_count=0,
                )
                return self.not_converged()
        if self.s.give_back:
            given = self.give_back()
            if given is not None:
                return given
        return self.none("converged: nothing to do")

    def forget(self) -> None:
        self.update(
            cluster_state=ClusterState.NOT_CONVERGED,
            history=(),
            record_due=True,
            reduced={},
            reduced_jobs=frozenset(),
            reduce_fraction_before=None,
            actions_since_reduce=None,
            converged_fraction=None,
            converged_jobs=frozenset(),
            settle_count=0,
        )
        self.record_if_due()

    def not_converged(self) -> Plan:
        if not self.jobs:
            return self.none("no running jobs")
        if not self.missing:
            count = self.state.settle_count + 1
            if count >= self.s.settle_rounds:
                self.update(
                    cluster_state=ClusterState.CONVERGED,
                    settle_count=0,
                    converged_fraction=self.fraction,
                    converged_jobs=frozenset(self.by_id),
                )
                return self.none(f"all SLOs met for {count} settled round(s): converged")
            self.update(settle_count=count)
            return self.none(f"all SLOs met: settling ({count}/{self.s.settle_rounds})")
        if self.state.settle_count:
            self.update(settle_count=0)
        return self.reconfigure()

    # -- reconfigure ------------------------------------------------------------------------------

    def reconfigure(self) -> Plan:
        blacklist = self.state.blacklist
        candidates = sorted(
            (j for j in self.missing if j.job_id not in blacklist),
            key=lambda j: (-j.priority, self.utilities[j.job_id], j.job_id),
        )
        if not candidates:
            return self.none("every job missing its SLO is blacklisted")
        free = self.snapshot.cluster.free_cores
        passed: list[str] = []
        reduce_tried = False
        for job in candidates:
            if job.executors >= upper_bound(job):
                passed.append(f"{job.name}: at its upper bound")
                continue
            sizing = self.size(job)
            if sizing.unattainable:
                expiry = self.later(self.s.blacklist_ttl_s)
                self.update(blacklist={**self.state.blacklist, job.job_id: expiry})
                passed.append(f"{job.name}: {sizing.note}, blacklisted")
                continue
            if sizing.target is None or sizing.target <= job.executors:
                passed.append(f"{job.name}: {sizing.note}")
                continue
            # Each executor must fit whole on one node (cores and memory): one that does not
            # stays pending, so free cores scattered over the nodes are no room.
            fit = min(
                executors_that_fit(job, free),
                room_for(self.snapshot.cluster, job.cores_per_executor, job.memory_mb),
            )
            if fit == 0:
                if not reduce_tried:
                    reduce_tried = True
                    plan = self.reduce_for_room(job)
                    if plan is not None:
                        return plan
                passed.append(f"{job.name}: no room")
                continue
            target = min(sizing.target, job.executors + fit)
            change = Change(job.job_id, job.executors, target, sizing.note)
            self.acted(Step.RECONFIGURE, [change], job, self.utilities)
            return self.plan(
                ActionKind.RECONFIGURE,
                f"{job.name} misses its SLO (utility {job.utility:.3g} of {job.priority:g}): "
                f"{job.executors}→{target} ({sizing.note})",
                [change],
                job.job_id,
            )
        shown = "; ".join(passed[:_PASSED_SHOWN])
        more = f"; and {len(passed) - _PASSED_SHOWN} more" if len(passed) > _PASSED_SHOWN else ""
        return self.none(f"no candidate can grow ({shown}{more})")

    def reduce_for_room(self, job: JobView) -> Plan | None:
        """Nothing of ``job`` fits: the cluster counts as congested; reduce if (b) and (c)."""
        if self.state.reduced or not self.some_met:
            return None
        if self.lockout():
            return self.revert(f"no room for {job.name}, and a reduce just did not help")
        return self.reduce(f"no room for {job.name}: cluster congested")

    def size(self, job: JobView) -> Sizing:
        s = self.s
        if s.model_sizing or s.blacklist_unattainable:
            model = self.state.models.get(job.job_id)
            if model is not None and usable(model, job, s.model_min_windows):
                sized = model_target(job, model, s)
                if sized.unattainable and s.blacklist_unattainable:
                    return sized
                if not sized.unattainable and s.model_sizing and sized.target is not None:
                    return sized
        return paper_target(job, s)

    def give_back(self) -> Plan | None:
        s = self.s
        banned = self.state.give_back_blacklist
        best: tuple[float, str, JobView, int] | None = None
        for job in self.jobs:
            if job.restart_on_resize or job.job_id in banned or not self.meets(job):
                continue
            model = self.state.models.get(job.job_id)
            if model is None or not usable(model, job, s.model_min_windows):
                continue
            need = model_need(job, model, s)
            if need is None:
                continue
            key = (-(job.executors - need) * job.cores_per_executor, job.job_id, job, need)
            if best is None or key[:2] < best[:2]:
                best = key
        if best is None:
            return None
        _, _, job, need = best
        change = Change(job.job_id, job.executors, need, "give back")
        self.acted(Step.GIVE_BACK, [change], job, {job.job_id: job.utility})
        return self.plan(
            ActionKind.RECONFIGURE,
            f"converged: {job.name} needs {need} of its {job.executors} executor(s) (model); "
            "giving back the rest",
            [change],
            job.job_id,
        )


def _best_index(history: list[Configuration]) -> int:
    """The configuration with the highest utility fraction; the latest among equals."""
    return max(range(len(history)), key=lambda i: (history[i].fraction, i))


def paper_policy(params: Mapping[str, Any]) -> HengePolicy:
    """``henge-paper``: the thesis's state machine, ``params`` overriding the paper's defaults."""
    return HengePolicy(PAPER, build_settings(HengeSettings, params))


def product_policy(params: Mapping[str, Any]) -> HengePolicy:
    """``henge``: :data:`PRODUCT_DEFAULTS` switched on, then ``params`` over both."""
    return HengePolicy(PRODUCT, build_settings(HengeSettings, {**PRODUCT_DEFAULTS, **params}))
