"""``henge``: Henge's state machine made right for shared clusters whose load changes (DESIGN §3).

One round, on the jobs ``decide`` counted:

0. Housekeeping: expired blacklist entries go; each job's model folds in the newest window, its
   prediction error (predicted against measured utility at its allocation and input) is
   averaged in, its recent peak input is updated (decaying over ``stabilization_s``), and so is
   how often its input has lately risen by more than ``headroom`` within ``quiesce_s``
   (:mod:`.rises`); with ``price_moves``, what its latest change is costing it (:mod:`.costs`),
   and with ``proactive`` how far its forecast and the seasonal-naive one were from its input.
1. Quiesce: after a move nothing else happens until the moved jobs run at their new size and a
   report window has passed (``adaptive_quiesce``), or ``quiesce_s`` at the most.
2. Judge the move by what it caused: each moved job's utility now against what it would have
   earned without the move at the input it has now (its model at the old allocation; without
   a trusted model, its utility before the move; if its input moved by more than 20 %, the
   least it would have earned: that utility after a fall, 0 after a rise). A job draining a
   backlog counts as helped. If the moved jobs together lost utility, the whole move is
   reverted to what ran before it (room made for waiting executors included; never below a
   job's minimum). A grown job that still misses its SLO and gained less than ``min_gain``
   loses its model's trust; when it did not even use its executors (busy at most
   ``capacity_threshold`` of the utilisation its SLO allows) it is blacklisted. With
   ``price_moves``, a move that would be reverted, or a grown job that would fail, waits while
   moved jobs may still be stalled by their change (:func:`.costs.recovering`), for their usual
   time to settle at most.
3. Plan: every counted job offers the solver a few executor counts with their predicted utility
   (:mod:`.allocate`) at the input it must be ready for, its recent peak (with ``peak_by_rises``
   weighed by the chance of a rise before executors could come back; a backlog only raises the
   count a growing job is sized for, to drain it within ``drain_s``); a job whose model is
   not trusted offers its allocation (valued at what it earns, or, while it drains a backlog, at
   the share of its demand it processes), one executor less at 0 when it meets its SLO above its
   minimum and a job of higher priority misses, and, missing its own, eq. 2.4's step (with
   ``price_moves``, a job missing its SLO whose model puts its per-batch floor above it is
   sized by its row cost instead: :meth:`ProductRound.floor_set_aside`). A job
   meeting its SLO gives way below its need at its peak along its curve when a job of higher
   priority misses; when the highest priority missing is its own, it lends what it keeps for its
   peak, below what it holds and down to what its input now needs with ``headroom`` (any missing
   job may take it); otherwise not at all. Of at least every missing job's priority, it also
   offers the count its highest input of the last ``quiesce_s`` needs with ``headroom``, valued
   at its priority times the chance that its input does not rise by more than ``headroom``
   (within ``quiesce_s``) in the next ``2 × quiesce_s`` (``lend_between_rises``; none while it
   has never risen). A job missing its SLO plans with the executors it runs: those that have
   waited ``quiesce_s`` for room on the nodes are growth the others make room for. Free cores
   in which the growth finds no room are left out and the allocation solved again. A count below
   what a job with a trusted model and a latency SLO holds is charged ``backlog_debt`` times its
   priority for each share of its input now that it would leave unprocessed beyond what the held
   count leaves (a backlog to work off later, missing its SLO again). If the best allocation
   raises some job's predicted utility by ``min_gain`` of its priority, the move toward it is
   made at once, several jobs together (a reconfiguration). With ``price_moves`` every count but
   the held one is charged what a change has cost the job over how long the new count should
   hold, and a job whose window may still hold the stall of its last change offers nothing below
   what it holds (nothing but it when it may keep state); with ``proactive`` a job with a
   trusted forecast is ready for its highest mean over the time a move takes to take effect,
   and one meeting its SLO that would miss it there counts as missing.
4. Otherwise, give back: jobs meeting their SLO whose model says they need fewer executors even
   at ``keep_headroom`` over their recent peak, for ``stabilization_s`` in a row, drop to that.
5. ``not_converged`` becomes ``converged`` after ``settle_rounds`` rounds with nothing to do.
   ``converged`` keeps planning every round, so a job missing an SLO that free cores or
   lower-priority executors could meet always sends the cluster back to work; the utility
   fraction falling ``converged_drop`` below the best since converging only resets that
   reference.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, ClassVar

from scheduler.core.admission import AdmissionRule
from scheduler.core.bounds import upper_bound
from scheduler.core.cluster import room_for
from scheduler.core.diagnosis import Diagnosis, Finding
from scheduler.core.model import (
    ActionKind,
    Change,
    ClusterState,
    InputForecast,
    JobView,
    Plan,
    Snapshot,
)
from scheduler.core.policies.henge import costs as change_costs
from scheduler.core.policies.henge import product_state, remedies
from scheduler.core.policies.henge.allocate import (
    Offer,
    Step,
    move_toward,
    solve,
)
from scheduler.core.policies.henge.budget import changes_left, spend, wait_s
from scheduler.core.policies.henge.costs import ChangeCost, Flow, Transient, charge, recovering
from scheduler.core.policies.henge.model import (
    JobModel,
    observe,
    predict,
    predicted_utilities,
    predicted_utility,
    sizes,
    usable,
)
from scheduler.core.policies.henge.outlook import (
    GUESSED_UTILISATION,
    demand,
    executors_needed,
    max_utilisation,
    utility_curve,
)
from scheduler.core.policies.henge.product_settings import ProductSettings
from scheduler.core.policies.henge.product_state import Move, MovedJob, ProductState
from scheduler.core.policies.henge.rises import (
    Rises,
    chance_within,
    highest,
    observe_rise,
    time_between,
)
from scheduler.core.policies.henge.sizing import paper_extra
from scheduler.core.policies.timers import keep_frozen
from scheduler.core.policy import JSONDict, build_settings
from scheduler.core.slo import meets_slo

NAME = "henge"
_RATE_CHANGE = 0.2
"""Without a trusted model, a job whose input moved by more than this since a move cannot be
judged against its utility before the move."""
_GROWING_GRID = 8
_GIVING_GRID = 2
"""Intervals of the executor counts at which a job's curve is sampled below its need: finer for
a job missing its SLO (it may end anywhere below its need) than for one giving way."""
_GRID_BUDGET = 1000
"""Roughly the points the solver is offered per round: with more jobs missing their SLO each of
their curves is coarser (down to :data:`_GIVING_GRID` intervals), and with more jobs in all the
curves of those giving way are too (down to one interval), so that a round stays fast."""
_LISTED = 12
"""Changes a round's reason names before it counts the rest."""
_HEADROOM_CREDIT = 1e-4
"""Credit (fraction of priority) of a growing job's headroom target in the solver."""
_SETTLE_QUIESCES = 5
"""A change is followed for at most this many ``quiesce_s`` (``price_moves``), and a move waits
at most this long for its jobs to recover before a verdict against it stands."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What a move's jobs earn now against what they would have earned without it."""

    actual: float
    without: float
    by_drain: list[str]
    """Jobs judged on their drain rate (working off a backlog)."""
    short: list[tuple[JobView, MovedJob, float]]
    """Grown jobs still missing their SLO that gained less than ``min_gain``, each with what
    it would have earned without the move."""


class HengeProductPolicy:
    """The product policy; ``settings`` switch each departure from the paper."""

    # (class variables: mypyc compiles this class, and would make plain attributes per-instance
    # defaults that the registry could not read from the class)
    name: ClassVar[str] = NAME
    admission_rule: ClassVar[AdmissionRule] = AdmissionRule.PRIORITY

    def __init__(self, settings: ProductSettings | None = None) -> None:
        self.settings = settings or ProductSettings()

    @property
    def admission_tolerance(self) -> float:
        """A running job missing its SLO by less than ``min_gain`` of its priority holds no
        queued job back: a move is made only for a gain of at least that much, so it may
        usually miss by so little for hours (a top-tier job 2 % short kept a newcomer of its
        priority waiting 20 minutes while lower tiers held the cores it needed)."""
        return self.settings.min_gain

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> HengeProductPolicy:
        return cls(build_settings(ProductSettings, params))

    def initial_state(self) -> ProductState:
        return ProductState()

    def decide(
        self, snapshot: Snapshot, state: ProductState, now: datetime
    ) -> tuple[Plan, ProductState]:
        round_ = ProductRound(self.settings, snapshot, state, now)
        return round_.run(), round_.state

    def dump_state(self, state: ProductState) -> JSONDict:
        return product_state.dump(state)

    def load_state(self, data: JSONDict) -> ProductState:
        return product_state.load(data)


class ProductRound:
    """One round's working memory; ``state`` ends as the state for the next round."""

    def __init__(
        self, settings: ProductSettings, snapshot: Snapshot, state: ProductState, now: datetime
    ) -> None:
        self.s = settings
        self.snapshot = snapshot
        self.state = state
        self.now = now
        self.now_s = now.timestamp()
        self.jobs = snapshot.jobs
        self.by_id = {j.job_id: j for j in self.jobs}
        self.total = sum(j.utility for j in self.jobs)
        self.maximum = sum(j.priority for j in self.jobs)
        self.notes: list[str] = []
        self._trusted: dict[str, JobModel | None] = {}
        self.errors: dict[str, float] = dict(state.errors)
        """Each job's prediction error: the round's own copy, so that judging many moved jobs
        changes entries in place instead of copying the mapping per job."""
        self._needs: dict[str, int | None] = {}
        """Executors each offered job needs at its demand (``None``: unknown or out of reach)."""
        self._top_missing = 0.0
        """The highest priority of a job missing its SLO (set when a move is planned)."""
        self._capacity = 0.0
        """The cores the counted jobs can use: the free ones and those they hold."""
        self._grid = _GROWING_GRID
        """Intervals of the curve of a job missing its SLO this round (see _GRID_BUDGET)."""
        self._giving_grid = _GIVING_GRID
        """Intervals of the curve of a job giving way this round."""
        self._waiting: set[str] = set()
        """Jobs planned with the executors they run, the others waiting for room."""
        self._rationed: dict[str, float] = {}
        """Jobs held where they are for want of a change in their budget (``changes_per_day``),
        by name, and the seconds until they have one."""
        self._found: dict[str, Diagnosis] = {}
        """This round's diagnosis of each job missing its SLO (``diagnose``)."""

    # -- helpers ---------------------------------------------------------------------------

    @property
    def fraction(self) -> float:
        return self.total / self.maximum if self.maximum > 0 else 1.0

    def update(self, **changes: Any) -> None:
        self.state = dataclasses.replace(self.state, **changes)

    def none(self, text: str) -> Plan:
        reason = "; ".join([*self.notes, text])
        return Plan.no_change(reason, self.state.cluster_state, self.total, self.maximum)

    def trusted(self, job: JobView) -> JobModel | None:
        """The job's model, when it may size the job (decided once per round and job)."""
        if job.job_id not in self._trusted:
            model = self.state.models.get(job.job_id)
            if (
                model is None
                or not sizes(model, job, self.s.model_min_windows)
                or self.errors.get(job.job_id, 0.0) > self.s.model_max_error
            ):
                model = None
            self._trusted[job.job_id] = model
        return self._trusted[job.job_id]

    # -- the round ---------------------------------------------------------------------------

    def run(self) -> Plan:
        self.housekeeping()
        if self.s.diagnose:
            self.diagnose()
        move = self.state.last_move
        if move is not None and not move.judged:
            waiting = self.quiescing(move)
            if waiting is not None:
                return self.none(waiting)
            judged = self.judge(move)
            if judged is not None:
                return judged
        if self._found and self.snapshot.can_replace:
            replaced = self.replace_slow()
            if replaced is not None:
                return replaced
        planned = self.plan_move()
        if planned is not None:
            return planned
        if self.s.give_back:
            given = self.give_back()
            if given is not None:
                return given
        return self.rest()

    def housekeeping(self) -> None:
        st = self.state
        blacklist = {k: t for k, t in st.blacklist.items() if t > self.now}
        models: dict[str, JobModel] = {}
        errors: dict[str, float] = {}
        peaks: dict[str, tuple[float, float]] = {}
        rises: dict[str, Rises] = {}
        short: dict[str, float] = {}
        # A moved job's window mixes its old and new allocation for a while: its error is
        # measured when the move is judged instead.
        move = st.last_move
        recently_moved = set(move.jobs) if move is not None and self.recent(move) else set()
        alpha = self.s.model_alpha
        for job in self.jobs:
            job_id = job.job_id
            old = st.models.get(job_id)
            model = observe(old, job, alpha)
            if model is not None and old is not None and model is not old and self.settling(job):
                # (its busy time per row still tells its row cost)
                model = model._replace(overhead_s=old.overhead_s, trigger_s=old.trigger_s)
            if model is not None:
                models[job_id] = model
                error = None if job_id in recently_moved else self.prediction_error(model, job, old)
                previous = st.errors.get(job_id)
                if error is not None:
                    errors[job_id] = (
                        error if previous is None else previous + alpha * (error - previous)
                    )
                elif previous is not None:
                    errors[job_id] = previous
            peak = self.peak(job, st.peaks.get(job_id))
            if peak is not None:
                peaks[job_id] = peak
            rise = self.rise(job, st.rises.get(job_id)) if self.s.lend_between_rises else None
            if rise is not None:
                rises[job_id] = rise
            running = job.metrics.executors_reported if job.metrics is not None else None
            if running is not None and running < job.executors:
                short[job_id] = st.short_since.get(job_id, self.now_s)
        snap = self.snapshot
        self.errors = keep_frozen(snap, st.errors, errors)
        self.update(
            blacklist=blacklist,
            models=keep_frozen(snap, st.models, models),
            errors=self.errors,
            peaks=keep_frozen(snap, st.peaks, peaks),
            rises=keep_frozen(snap, st.rises, rises),
            short_since=keep_frozen(snap, st.short_since, short),
        )
        if self.s.proactive:
            self.update(forecast_errors=keep_frozen(snap, st.forecast_errors, self.scored()))
        if st.budgets:
            live = {k: v for k, v in st.budgets.items() if k in self.by_id}
            self.update(budgets=keep_frozen(snap, st.budgets, live))
        if st.costs:
            # (after the models are updated: the expected utility is their newest prediction)
            costs: dict[str, ChangeCost] = {}
            for job in self.jobs:
                cost = st.costs.get(job.job_id)
                if cost is not None:
                    costs[job.job_id] = self.follow(job, cost)
            self.update(costs=keep_frozen(snap, st.costs, costs))

    def diagnose(self) -> None:
        self._found = remedies.diagnoses(self.jobs, self.s)
        self.update(
            skewed_at=remedies.skew_seen(
                self.jobs, self._found, self.state.skewed_at, self.now_s, self.s.stabilization_s
            )
        )
        hosts = remedies.hosts_slow_for_several(self._found)
        if hosts:
            self.notes.append(f"slow executors of several jobs on {', '.join(hosts)}")
        if not self.snapshot.can_replace:
            slow = [self.by_id[j].name for j, d in sorted(self._found.items())
                    if d.finding is Finding.SLOW_EXECUTOR]  # fmt: skip
            if slow:
                self.notes.append(
                    f"slow executors of {', '.join(slow)}: the realizer cannot replace "
                    "executors, so they are sized as before"
                )

    def replace_slow(self) -> Plan | None:
        """Replace the slow executors of the jobs diagnosed with them, if any."""
        done = remedies.replace_slow(
            self.jobs, self._found, self.state.replaced, self.snapshot.cluster, self.now_s, self.s
        )
        self.update(replaced=done.replaced)
        self.notes.extend(done.notes)
        found = done.replacements
        if not found:
            return None
        names = ", ".join(f"{self.by_id[r.job_id].name} ({r.reason})" for r in found)
        return Plan(
            ActionKind.REPLACE,
            "; ".join([*self.notes, f"replace: {names}"]),
            self.state.cluster_state,
            job_id=found[0].job_id if len(found) == 1 else None,
            total_utility=self.total,
            max_utility=self.maximum,
            replacements=tuple(found),
        )

    def growth_top(self, job: JobView) -> int:
        """The most executors ``job`` may have: its upper bound, or less (with a note) when a
        diagnosis says more would not help it (``diagnose``)."""
        top = upper_bound(job)
        if not self.s.diagnose or job.executors >= top or job.job_id in self.state.blacklist:
            return top
        cap = remedies.growth_cap(
            job, self._found, self.state.replaced, self.now_s, self.s, self.snapshot.can_replace
        )
        if cap is None or cap[0] >= top:
            return top
        self.notes.append(cap[1])
        return cap[0]

    def scored(self) -> dict[str, tuple[float, float]]:
        """Each job's forecast errors with its input now: the moving averages of how far the
        forecast's mean and the seasonal-naive forecast were from it."""
        errors: dict[str, tuple[float, float]] = {}
        alpha = self.s.model_alpha
        for job in self.jobs:
            old = self.state.forecast_errors.get(job.job_id)
            forecast = job.forecast
            rate = job.metrics.input_rate if job.metrics is not None else None
            k = forecast.index(self.now) if forecast is not None and rate is not None else None
            if forecast is None or rate is None or k is None:
                if old is not None:
                    errors[job.job_id] = old
                continue
            miss, naive = abs(rate - forecast.mean[k]), abs(rate - forecast.naive[k])
            if old is not None:
                miss, naive = old[0] + alpha * (miss - old[0]), old[1] + alpha * (naive - old[1])
            errors[job.job_id] = (miss, naive)
        return errors

    def forecast(self, job: JobView) -> InputForecast | None:
        """The job's forecast while it may be trusted (``proactive``): it covers now, and beat
        the seasonal-naive forecast both in its fitter's backtest and on the input since."""
        forecast = job.forecast
        if not self.s.proactive or forecast is None or forecast.index(self.now) is None:
            return None
        miss, naive = self.state.forecast_errors.get(job.job_id, (None, None))
        return forecast if forecast.trusted(miss, naive) else None

    def lead_s(self, job: JobView) -> float:
        """How long a move of ``job`` takes to take effect: a quiesce to judge it, and its usual
        time to settle after a change (a quiesce while unknown)."""
        cost = self.state.costs.get(job.job_id)
        settle = cost.settle_s if cost is not None and cost.settle_s is not None else None
        return self.s.quiesce_s + (self.s.quiesce_s if settle is None else settle)

    def rising(self, job: JobView) -> bool:
        """Whether ``job`` meets its SLO now but its trusted forecast and model say it will
        not within :meth:`lead_s` on what it holds (``proactive``)."""
        if self.forecast(job) is None or not meets_slo(job.utility, job.priority):
            return False
        model = self.trusted(job)
        rate = self.ready_rate(job)
        if model is None or rate is None:
            return False
        return predicted_utility(model, job, job.executors, rate) < job.priority * (
            1 - self.s.min_gain
        )

    def follow(self, job: JobView, cost: ChangeCost) -> ChangeCost:
        """``cost`` with this round of the change being followed, if any (:mod:`.costs`)."""
        if cost.open is None:
            return cost
        m = job.metrics
        running = m is not None and m.executors_reported == job.executors
        if job.priority <= 0:
            return cost
        fraction = job.utility / job.priority
        expected = self.expected(job, cost.open, running)
        # Batches complete on the new executors (a window with input but without one is a
        # stall, not a job falling behind). The batch in flight at the change may still
        # complete on the old ones: a batch later, the window holds only batches begun on the
        # new.
        flow = None
        processing = m is not None and bool(m.processed_rate or not m.input_rate)
        if m is not None and m.seconds and processing:
            quiet_s = m.seconds + max(m.mean_batch_s or 0.0, m.trigger_interval_s or 0.0)
            flow = Flow(quiet_s, m.seconds, self.draining(job))
        cap = _SETTLE_QUIESCES * self.s.quiesce_s
        alpha = self.s.model_alpha
        return change_costs.observe(cost, self.now_s, fraction, expected, running, flow, alpha, cap)

    def expected(self, job: JobView, change: Transient, running: bool) -> float | None:
        """The utility fraction ``job`` should show now on the path its model predicts after
        ``change`` (``None`` without a trusted model): its window mixes the executors it ran
        before with the new ones, for as long as a window lasts once they run."""
        model = self.trusted(job)
        m = job.metrics
        if model is None or m is None or m.input_rate is None:
            return None
        rate = m.input_rate
        since = change.running_s
        if since is None and running:
            since = self.now_s
        new = 0.0  # the share of the window on the new executors
        if since is not None:
            new = min(1.0, (self.now_s - since) / m.seconds) if m.seconds else 1.0
        after = predicted_utility(model, job, job.executors, rate)
        before = predicted_utility(model, job, change.ran, rate) if new < 1 else after
        return (new * after + (1 - new) * before) / job.priority

    def prediction_error(
        self, model: JobModel, job: JobView, previous: JobModel | None
    ) -> float | None:
        """|predicted − measured| utility / priority for a new window of a usable model; with
        ``steady_error`` none while the job works off a backlog faster than its input
        (:meth:`draining`)."""
        if model is previous or not usable(model, job, self.s.model_min_windows):
            return None  # (a model without batch timings cannot predict a latency)
        if self.s.steady_error and self.draining(job):
            return None
        m = job.metrics
        assert m is not None and m.input_rate is not None
        executors = m.executors_reported or job.executors
        predicted = predicted_utility(model, job, executors, m.input_rate)
        return abs(predicted - job.utility) / job.priority if job.priority > 0 else 0.0

    def peak(self, job: JobView, old: tuple[float, float] | None) -> tuple[float, float] | None:
        rate = job.metrics.input_rate if job.metrics is not None else None
        if rate is None:
            return old
        if old is None:
            return rate, self.now_s
        value, at = old
        tau = self.s.stabilization_s
        decayed = value * math.exp(-(self.now_s - at) / tau) if tau > 0 else 0.0
        return max(rate, decayed), self.now_s

    def rise(self, job: JobView, old: Rises | None) -> Rises | None:
        rate = job.metrics.input_rate if job.metrics is not None else None
        if rate is None:
            return old
        s = self.s
        return observe_rise(old, self.now_s, rate, s.quiesce_s, s.headroom, s.model_alpha)

    # -- quiesce and judging -------------------------------------------------------------

    def quiescing(self, move: Move) -> str | None:
        """Why the round still waits after ``move``; ``None`` when it may be judged.

        A move that worked shows it early: once the moved jobs run at their new size and a
        report window has passed, every one of them meeting its SLO ends the wait. Anything
        else is judged only after ``quiesce_s``, when the sliding window holds no report from
        before the move (and with ``price_moves`` a move that looks lost then waits for its
        jobs to recover from their change: :meth:`judge`).
        """
        elapsed = (self.now - move.at).total_seconds()
        if elapsed >= self.s.quiesce_s:
            return None
        left = f"{self.s.quiesce_s - elapsed:.0f} s left at most"
        if not self.s.adaptive_quiesce:
            return f"waiting for quiesce ({left})"
        if move.running_since is None:
            if not self.moved_jobs_running(move):
                return f"waiting for the moved jobs' executors ({left})"
            self.update(last_move=dataclasses.replace(move, running_since=self.now))
            return f"moved jobs at their new size; one more report window ({left})"
        if self.reported_since(move.running_since) and self.moved_jobs_meet(move):
            return None
        return f"waiting for quiesce ({left})"

    def recent(self, move: Move) -> bool:
        """Whether ``move``'s jobs' windows may still mix their old and new allocations: their
        prediction errors are folded in when it is judged, not every round."""
        return (self.now - move.at).total_seconds() < 2 * self.s.quiesce_s

    def recovery_waits(self, move: Move) -> dict[str, float]:
        """The moved jobs whose windows may still hold the stall of their change (``price_moves``;
        :func:`~.costs.recovering`), by job id, with how long the round may still wait for
        each: until its usual time to settle after a change since the move, or until it
        recovers while that is not known yet, ``_SETTLE_QUIESCES`` quiesces at most. What they
        earn meanwhile is the change's cost, a stall that was to be expected, and no sign that
        the move failed."""
        if not self.s.price_moves:
            return {}
        cap = _SETTLE_QUIESCES * self.s.quiesce_s
        elapsed = (self.now - move.at).total_seconds()
        waits: dict[str, float] = {}
        for job_id in sorted(move.jobs):
            cost = self.state.costs.get(job_id)
            if job_id in self.by_id and cost is not None and recovering(cost, self.now_s):
                usual = cap if cost.settle_s is None else min(cap, cost.settle_s)
                if usual > elapsed:
                    waits[job_id] = usual - elapsed
        return waits

    def moved_jobs_meet(self, move: Move) -> bool:
        return all(
            meets_slo(self.by_id[j].utility, self.by_id[j].priority)
            for j in move.jobs
            if j in self.by_id
        )

    def moved_jobs_running(self, move: Move) -> bool:
        for job_id, moved in sorted(move.jobs.items()):
            job = self.by_id.get(job_id)
            if job is None:
                continue
            reported = job.metrics.executors_reported if job.metrics is not None else None
            if reported != moved.after:
                return False
        return True

    def reported_since(self, moment: datetime) -> bool:
        """Every moved job has a report that arrived after ``moment``."""
        move = self.state.last_move
        assert move is not None
        for job_id in move.jobs:
            job = self.by_id.get(job_id)
            if job is None:
                continue
            if job.last_report_at is None or job.last_report_at <= moment:
                return False
        return True

    def judge(self, move: Move) -> Plan | None:
        """Keep or revert ``move`` by what its jobs earn against what they would without it.
        With ``price_moves`` a move that looks lost (or a grown job that looks to have gained
        too little) while moved jobs may still be stalled by their change is judged later, once
        they have recovered: a stall that was to be expected is no sign that the move failed."""
        if move.revert:
            self.update(last_move=dataclasses.replace(move, judged=True))
            return None
        waits = self.recovery_waits(move)
        errors_before = {j: self.errors.get(j) for j in move.jobs}
        verdict = self.verdict(move, waits)
        scale = sum(self.by_id[j].priority for j in move.jobs if j in self.by_id)
        lost = verdict.actual < verdict.without - self.s.min_gain * scale
        if waits and (lost or verdict.short):
            # The errors are folded in once, when the move is judged, not in every round put off.
            self.restore_errors(errors_before)
            names = _first_few([self.by_id[j].name for j in waits])
            left = f"{max(waits.values()):.0f} s left at most"
            return self.none(f"moved jobs recovering from their change: {names} ({left})")
        self.update(last_move=dataclasses.replace(move, judged=True))
        for job, moved, counterfactual in verdict.short:
            self.judge_growth(job, moved, counterfactual)
        if lost:
            self.notes.append(
                f"the moved jobs earn {verdict.actual:.4g}, {verdict.without:.4g} without the move"
            )
            return self.revert(move)
        self.notes.append(self.held(verdict.actual, verdict.without, verdict.by_drain))
        return None

    def verdict(self, move: Move, waits: Mapping[str, float]) -> Verdict:
        """What the moved jobs earn now and would earn without ``move``, and the grown jobs that
        look to have gained too little. A job still recovering from its change does not fold
        its prediction error in (its window may hold the stall), nor does any once the rounds
        fold it in again (:meth:`recent`)."""
        fold = self.recent(move)
        actual = without = 0.0
        by_drain: list[str] = []
        short: list[tuple[JobView, MovedJob, float]] = []
        for job_id, moved in sorted(move.jobs.items()):
            job = self.by_id.get(job_id)
            if job is None:
                continue
            if fold and job_id not in waits:
                self.track_error(job)
            counterfactual = self.counterfactual(job, moved)
            known = counterfactual is not None
            if counterfactual is None:
                counterfactual = self.least_without(job, moved)
                if counterfactual is None:
                    continue
            helped = self.draining(job)
            faster = self.drains_faster(job, moved)
            earned = job.priority if helped else job.utility
            actual += max(earned, counterfactual) if faster else earned
            without += counterfactual
            helped = helped or faster
            if helped:
                by_drain.append(job.name)
            grown = known and moved.after > moved.ran and not helped
            if grown and self.gained_little(job, moved, counterfactual):
                short.append((job, moved, counterfactual))
        return Verdict(actual, without, by_drain, short)

    def held(self, actual: float, without: float, by_drain: list[str]) -> str:
        """Why the last move stays: a judged move that is kept says so, with the figures it
        was judged on, so that the round's reason never hides a judgment."""
        text = f"the last move holds: the moved jobs earn {actual:.4g}, {without:.4g} without it"
        if by_drain:
            text += f" (judged on the drain rate, draining a backlog: {_first_few(by_drain)})"
        return text

    def track_error(self, job: JobView) -> None:
        """Fold a moved job's prediction error in now that its window is all after the move."""
        model = self.state.models.get(job.job_id)
        if model is None:
            return
        error = self.prediction_error(model, job, None)
        if error is None:
            return
        previous = self.errors.get(job.job_id, error)
        self.set_error(job, previous + self.s.model_alpha * (error - previous))

    def set_error(self, job: JobView, error: float) -> None:
        self.errors[job.job_id] = error  # the state's mapping too (housekeeping shares it)
        self._trusted.pop(job.job_id, None)

    def restore_errors(self, errors: Mapping[str, float | None]) -> None:
        """Put back the prediction errors ``errors`` held (``None``: none yet) by job id."""
        for job_id, error in errors.items():
            if error is None:
                self.errors.pop(job_id, None)
            else:
                self.errors[job_id] = error
            self._trusted.pop(job_id, None)

    def counterfactual(self, job: JobView, moved: MovedJob) -> float | None:
        """What ``job`` would earn now without the move, or ``None`` if that is unknown."""
        model = self.trusted(job) if self.s.judge_by_cause else None
        rate = job.metrics.input_rate if job.metrics is not None else None
        if model is not None and rate is not None:
            return predicted_utility(model, job, moved.ran, rate)
        if self.s.judge_by_cause and (
            rate is None
            or moved.rate_before is None
            or abs(rate - moved.rate_before) > _RATE_CHANGE * moved.rate_before
        ):
            return None
        return moved.utility_before

    def least_without(self, job: JobView, moved: MovedJob) -> float | None:
        """The least ``job`` would earn now without the move, when :meth:`counterfactual` cannot
        say: on the same executors a job earns no more at a higher input, so its utility before
        the move bounds it from below only if its input fell; after a rise it could be anything
        down to 0. Counting such a job at this bound keeps a move from being reverted on what it
        cost the other moved jobs alone (a grown job whose input kept rising during the quiesce
        would otherwise count neither its gain nor anything else). ``None`` when its input is
        not measured."""
        rate = job.metrics.input_rate if job.metrics is not None else None
        if rate is None or moved.rate_before is None:
            return None
        return moved.utility_before if rate < moved.rate_before else 0.0

    def draining(self, job: JobView) -> bool:
        """A job working off a backlog faster than its input: judged on its drain rate."""
        m = job.metrics
        return bool(
            m is not None
            and m.backlog_rows
            and m.input_rate is not None
            and m.processed_rate is not None
            and m.processed_rate > m.input_rate * 1.02
        )

    def drains_faster(self, job: JobView, moved: MovedJob) -> bool:
        """A grown job still behind a backlog but working it off faster than before the move:
        judged on that drain rate, as costing nothing, whatever its latency says yet."""
        m = job.metrics
        return bool(
            moved.after > moved.ran
            and m is not None
            and m.backlog_rows
            and moved.processed_before
            and (m.processed_rate or 0.0) >= moved.processed_before * (1 + self.s.min_gain)
        )

    def gained_little(self, job: JobView, moved: MovedJob, counterfactual: float) -> bool:
        """Whether grown ``job`` still misses its SLO and gained less than ``min_gain``."""
        gain = (job.utility - counterfactual) / job.priority
        return not meets_slo(job.utility, job.priority) and gain < self.s.min_gain

    def judge_growth(self, job: JobView, moved: MovedJob, counterfactual: float) -> None:
        gain = (job.utility - counterfactual) / job.priority
        self.notes.append(f"{job.name} gained {gain:.1%} < {self.s.min_gain:.0%}")
        if moved.by_model:
            # The model promised more: stop trusting it until its error falls back.
            self.set_error(job, 1.0)
        if self.idle(job):
            expiry = self.now + timedelta(seconds=self.s.blacklist_ttl_s)
            self.update(blacklist={**self.state.blacklist, job.job_id: expiry})
            self.notes.append(f"{job.name} does not use its executors: blacklisted")

    def idle(self, job: JobView) -> bool:
        """Whether ``job`` leaves its executors idle: busy at most ``capacity_threshold`` of
        the utilisation its SLO allows. A latency SLO allows far less than full use (a job whose
        batches must finish well within their trigger meets it only at ρ ≈ 0.35, say), so
        measured against 1 such a job would always look idle, and a failed growth would shut it
        out of growing for ``blacklist_ttl_s`` however far its input then rose."""
        capacity = job.metrics.capacity if job.metrics is not None else None
        if capacity is None:
            return False
        model = self.state.models.get(job.job_id)
        allowed = max_utilisation(model, job) if model is not None else 1.0
        return capacity <= self.s.capacity_threshold * min(1.0, max(allowed, 0.0))

    def revert(self, move: Move) -> Plan:
        # What ran before the move comes back, room included: a job the move made room for
        # returns to the executors it ran, or the room stays with it and the executors given
        # back to the others would wait for room in their turn.
        changes = []
        for job_id, moved in sorted(move.jobs.items()):
            job = self.by_id.get(job_id)
            if job is None:
                continue
            # (what ran may be below the job's minimum: executors admitted pending)
            target = max(moved.ran, job.min_executors)
            if job.executors != target:
                changes.append(Change(job_id, job.executors, target, "revert"))
        self.act(changes, revert=True)
        self.update(cluster_state=ClusterState.NOT_CONVERGED)
        return self.plan(ActionKind.REVERT, "revert the last move", changes)

    # -- moving --------------------------------------------------------------------------

    def plan_move(self) -> Plan | None:
        missing = [
            j.priority for j in self.jobs if not meets_slo(j.utility, j.priority) or self.rising(j)
        ]
        if not missing:
            return None  # nothing to gain: only a job missing its SLO can gain utility
        self._top_missing = max(missing)
        self._grid = max(_GIVING_GRID, min(_GROWING_GRID, _GRID_BUDGET // len(missing)))
        self._giving_grid = max(1, min(_GIVING_GRID, _GRID_BUDGET // len(self.jobs)))
        jobs = [self.as_placed(job) for job in self.jobs]
        self._capacity = self.snapshot.cluster.free_cores + sum(
            j.executors * j.cores_per_executor for j in jobs
        )
        offers = [self.offer(job) for job in jobs]
        if self._rationed:
            held = [f"{name} (one in {wait / 60:.0f} min)" for name, wait in self._rationed.items()]
            self.notes.append(f"held, no change left in its budget: {_first_few(held)}")
        steps = self.placed_steps(offers, jobs)
        if steps is None:
            self.notes.append("the jobs' minimums do not fit")
            return None
        values = {o.job.job_id: o for o in offers}
        helped = any(self.helps(s, values[s.job.job_id]) for s in steps)
        if not helped:
            self.notes.append(self.unhelped())
            return None
        # A job waiting for room never asks for fewer executors than it has asked for (cut
        # below, it would ask again next round and wait again), and growing into those it
        # asked for keeps its allocation: the room the others make is the change.
        ran = {
            s.job.job_id: (s.job.executors, s.target)
            for s in steps
            if s.job.job_id in self._waiting and s.target > s.job.executors
        }
        steps = [self.as_held(s) if s.job.job_id in self._waiting else s for s in steps]
        if not self.s.preempt:
            steps = [s for s in steps if s.target > s.job.executors]
        changes = [
            Change(s.job.job_id, s.job.executors, s.target, self.why(s.job, s.target))
            for s in steps
            if s.target != s.job.executors
        ]
        if not changes:
            self.notes.append("the only growth found is into executors already asked for")
            return None
        self.act(changes, ran=ran)
        self.update(cluster_state=ClusterState.NOT_CONVERGED, settle_count=0, best_fraction=None)
        return self.plan(ActionKind.RECONFIGURE, f"reconfigure: {self.listed(changes)}", changes)

    def placed_steps(self, offers: list[Offer], jobs: list[JobView]) -> list[Step] | None:
        """The steps toward the best allocation that the nodes can place (``None`` when the
        jobs' minimums do not fit). Free cores in which growth finds no room (scattered over
        the nodes, beside too little memory, or less than a core) are no room for it: solved
        once more with only the free cores the growth was placed in, the rest of it comes
        from cores that others give up instead of not at all. The second plan is kept when it
        reaches more value."""
        cluster = self.snapshot.cluster
        targets = solve(offers, cluster.free_cores)
        if targets is None:
            return None
        first = move_toward(targets, jobs, cluster)
        if first.short <= 0:
            return first.steps
        if first.took >= cluster.free_cores - 1e-9:
            return first.steps  # (no free core went unused: solved again, the same plan)
        again = solve(offers, first.took if first.took > 0 else 0.0)
        if again is None:
            return first.steps
        other = move_toward(again, jobs, cluster).steps
        return other if _reached(offers, other) > _reached(offers, first.steps) else first.steps

    def as_placed(self, job: JobView) -> JobView:
        """``job`` as the cluster holds it. Executors that have not come up within
        ``quiesce_s`` while the nodes have room for fewer of them than are missing wait for
        room: they hold no cores, so the plan counts them as growth the others must make room
        for (left as held, a job admitted into a full cluster would wait for them until some
        job gave back)."""
        since = self.state.short_since.get(job.job_id)
        m = job.metrics
        if since is None or m is None or m.executors_reported is None:
            return job
        if meets_slo(job.utility, job.priority):
            return job  # (nothing to gain from room for them now; they get it as it comes)
        waiting = job.executors - m.executors_reported
        if self.now_s - since < self.s.quiesce_s or waiting <= 0:
            return job
        if room_for(self.snapshot.cluster, job.cores_per_executor, job.memory_mb) >= waiting:
            return job  # (placed as soon as the cluster gets to it)
        self.notes.append(f"{job.name}: {waiting} executor(s) waiting for room")
        self._waiting.add(job.job_id)
        return dataclasses.replace(job, executors=m.executors_reported)

    def as_held(self, step: Step) -> Step:
        """``step`` of a job waiting for room, on the job as its allocation stands, never
        below it."""
        job = self.by_id[step.job.job_id]
        return Step(job, step.target if step.target > job.executors else job.executors)

    def helps(self, step: Step, offer: Offer) -> bool:
        """Whether growing ``step``'s job is worth a move: it raises the job's value by
        ``min_gain`` of its priority, or with ``grow_to_slo`` it brings a job missing its SLO to
        it."""
        if step.target <= step.job.executors:
            return False
        job = step.job
        after, now = offer.value_at(step.target), offer.value_at(job.executors)
        if after - now >= self.s.min_gain * job.priority:
            return True
        return (
            self.s.grow_to_slo
            and not meets_slo(job.utility, job.priority)
            and meets_slo(after, job.priority)
        )

    def unhelped(self) -> str:
        """Why a round with jobs missing their SLO moves nothing: name them (the first few), so
        that a quiet round never reads as if every job were fine."""
        names = [j.name for j in self.jobs if not meets_slo(j.utility, j.priority)]
        return (
            f"missing their SLO: {_first_few(names)}; the best allocation the cluster can hold, "
            f"what the others would lose counted, raises none of them by "
            f"{self.s.min_gain:.0%} of its priority"
        )

    def why(self, job: JobView, target: int) -> str:
        trusted = self.trusted(job) is not None
        if target < job.executors:
            gives = "gives executors to jobs whose utility gains more"
            return gives if trusted else f"{gives} (no trusted model: priced at all it earns)"
        if not trusted:
            return "eq. 2.4 (no trusted model)"
        need = self._needs.get(job.job_id)
        return "model: meets its SLO" if need is not None and target >= need else "model: closer"

    def offer(self, job: JobView) -> Offer:
        """What ``job`` offers the solver (see the module docstring)."""
        priority = job.priority
        eps = self.s.priority_epsilon * priority
        now = job.utility
        rising = self.rising(job)
        meets = meets_slo(now, priority) and not rising
        model = self.trusted(job)
        # Worth is judged at the input the job must be ready for: its recent peak, weighed with
        # `peak_by_rises` (a count that meets the SLO only at a passing dip would miss it again
        # before the next move could help). A backlog is transient, so it only raises the
        # target a growing job is sized for (below), never what its executors are worth.
        rate = self.ready_rate(job)
        top = self.growth_top(job)
        held = job.executors
        can_grow = held < top and job.job_id not in self.state.blacklist
        rho = max_utilisation(model, job) if model is not None else 0.0
        if model is not None and not meets and rho <= 0:
            # The model puts the per-batch floor above the SLO of a job that misses it: most
            # likely a floor fitted on batches working off a backlog, and a job its model gives
            # up on would starve whatever its priority. Eq. 2.4 steps instead, or with
            # ``price_moves`` its row cost, which still holds, sizes it as a job whose batch
            # timings are not known yet (for throughput at a guessed utilisation).
            model = self._trusted[job.job_id] = self.floor_set_aside(model)
            rho = max_utilisation(model, job) if model is not None else 0.0
        if model is None or rate is None:
            # A job working off a backlog earns nothing yet, but its executors are not idle:
            # valued at what it earns, it would be the cheapest donor the moment it starts to
            # drain, and cut back before it could (seen on a trace played in real time).
            worth = self.drain_worth(job)
            points = [(held, worth + 2 * eps)]
            if meets and held > job.min_executors and priority < self._top_missing:
                # What one executor less costs such a job is unknown: at worst all it earns.
                # Never offered, the lowest tier could not give way while it had no model,
                # and a middle tier whose model knows its loss would give in its place. (A
                # job already missing its SLO is not cut further on a guess: offered so too,
                # `tiers-diurnal` fell from 0.910 to 0.898 of the oracle, a silver job of seed
                # 2 to 0.57 of its utility.)
                points.append((held - 1, 0.0))
            target = self.untrusted_target(job)
            if can_grow and target is not None and not meets:
                # Eq. 2.4's step, and the way there at a utility assumed to rise evenly, so
                # that the solver can give part of the step when the whole does not pay. A
                # share too small to round to one more executor earns nothing: valued at the
                # held count, it would make staying put look better than what is measured.
                for k in range(1, self._grid + 1):
                    share = k / self._grid
                    count = held + round(share * (target - held))
                    if count > held:
                        points.append((count, worth + share * (priority - worth) + eps))
            return Offer.of(job, self.priced(job, points))
        need = executors_needed(model, job, rate, top, rho)
        self._needs[job.job_id] = need
        # Counts the cluster could never hold are no choice; the grid spans only the others.
        reachable = int(self._capacity // job.cores_per_executor)
        ceiling = max(held, min(top, reachable)) if can_grow else held
        # A job missing its SLO may end anywhere below its need; one meeting it only gives way,
        # so a coarser curve does, and one of a higher priority than every missing job's never
        # gives way below its need (whoever it helped would gain no more than it loses).
        if not meets:
            points = utility_curve(model, job, rate, need, ceiling, self._grid)
        elif priority < self._top_missing:
            points = utility_curve(model, job, rate, need, ceiling, self._giving_grid)
        else:
            points = [(need, priority) if need is not None else (held, now)]
            if need is not None:
                points += self.between_rises(job, model, need, rho)
        if need is not None and need <= ceiling:
            # A growing job is sized for its ready rate with ``headroom``.
            padded = demand(job, self.s.drain_s, rate=rate * (1 + self.s.headroom))
            target = executors_needed(model, job, padded, top, rho) if padded is not None else None
            if target is not None and need < target <= ceiling:
                points.append((target, priority + _HEADROOM_CREDIT * priority))
        current = self.worth_held(job, model, rate, rising)
        # A job waiting for room is not cut below what it runs: the plan keeps its allocation,
        # so cores counted as freed there would never be.
        cuts = job.job_id not in self._waiting
        kept = [
            (n, v if v < current else current) if n < held else (n, v)
            for n, v in points
            if (n < held and cuts) or (n > held and can_grow)
        ]
        kept.append((held, current + 2 * eps + _HEADROOM_CREDIT * priority))
        # One of the same priority as the highest missing lends what it keeps for its peak.
        if meets and cuts and need is not None and priority == self._top_missing:
            kept += [(n, min(v, current)) for n, v in self.lent(job, model, rate, need, rho)]
        return Offer.of(job, self.priced(job, self.with_debt(job, model, kept)))

    def priced(self, job: JobView, points: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """``points`` with every count but the held one charged what a change costs ``job``
        per second of the time its new allocation is expected to hold (``price_moves``).
        While its window may hold the stall of its last change, none below the held one (what
        it earns then tells what the change cost, not what its executors are worth: priced at
        it, a job just grown would be the cheapest donor, and jobs of one priority would pass
        executors back and forth), and none but the held one while it may keep state. A job
        whose budget of changes is spent (``changes_per_day``) is offered its held count only,
        and named in the round's reason."""
        held = job.executors
        if not self.can_change(job):
            kept = [(n, v) for n, v in points if n == held]
            if len(kept) < len(points):
                budget = self.state.budgets.get(job.job_id)
                per_day, burst = self.s.changes_per_day, self.s.change_burst
                self._rationed[job.name] = wait_s(budget, self.now_s, per_day, burst)
            return kept
        if self.s.price_moves and recovering(self.state.costs.get(job.job_id), self.now_s):
            grows = not self.stalls(job)
            points = [(n, v) for n, v in points if n == held or (grows and n > held)]
        per_s = self.change_charge(job)
        if per_s <= 0:
            return points
        return [(n, v - per_s) if n != held else (n, v) for n, v in points]

    def can_change(self, job: JobView) -> bool:
        """Whether ``job`` has a change left in its budget (always, without
        ``changes_per_day``)."""
        per_day = self.s.changes_per_day
        if per_day <= 0:
            return True
        budget = self.state.budgets.get(job.job_id)
        return changes_left(budget, self.now_s, per_day, self.s.change_burst) >= 1.0

    @staticmethod
    def stalls(job: JobView) -> bool:
        """Whether a change may stall ``job`` beyond its new executors' start: unless its
        reports say it keeps no state, which a change would reload (``price_moves`` holds a job
        that may stall where it is while it recovers; one that keeps none may grow then)."""
        return job.metrics is None or job.metrics.holds_state is not False

    def settling(self, job: JobView) -> bool:
        """Whether ``job`` has not settled since its last change (``price_moves``): what it
        earns meanwhile tells what the change costs (a state reload, executors starting), not
        what its executors are worth, and its batches tell that cost, not its per-batch
        overhead."""
        cost = self.state.costs.get(job.job_id) if self.s.price_moves else None
        return cost is not None and cost.open is not None

    def change_charge(self, job: JobView) -> float:
        """Utility per second a change of ``job`` costs over the time it is expected to hold
        (0 with ``price_moves`` off, or before a change of the job was measured)."""
        if not self.s.price_moves:
            return 0.0
        return charge(self.state.costs.get(job.job_id), job.priority, self.hold_s(job))

    def hold_s(self, job: JobView) -> float:
        """How long a new allocation of ``job`` is expected to hold: until its input next rises
        by more than ``headroom`` (the time between its rises, :func:`.rises.time_between`),
        within ``quiesce_s`` and ``stabilization_s`` (after which surplus is given back
        anyway). A job never seen rising holds ``stabilization_s``."""
        rises = self.state.rises.get(job.job_id)
        longest = max(self.s.stabilization_s, self.s.quiesce_s)
        between = time_between(rises, self.now_s) if rises is not None else None
        if between is None:
            return longest
        return min(longest, max(self.s.quiesce_s, between))

    def worth_held(self, job: JobView, model: JobModel, rate: float, rising: bool) -> float:
        """What the executors ``job`` holds are worth: what it earns now is measured, and fewer
        executors never earn more than that, whatever the model says; but a backlog being
        worked off only delays what its executors earn at its input, so that is their worth,
        and before a rise its trusted forecast sees coming they earn what the model says they
        will at the input it must be ready for."""
        now = job.utility
        if rising:
            return min(now, predicted_utility(model, job, job.executors, rate))
        m = job.metrics
        if m is not None and m.backlog_rows and self.draining(job):
            return max(now, predicted_utility(model, job, job.executors, m.input_rate or 0.0))
        return now

    def with_debt(
        self, job: JobView, model: JobModel, points: list[tuple[int, float]]
    ) -> list[tuple[int, float]]:
        """``points`` with each count below what ``job`` holds charged ``backlog_debt`` times
        its priority for each share of its input now that the model says the count would leave
        unprocessed beyond what the held count leaves (:class:`ProductSettings`)."""
        rate = job.metrics.input_rate if job.metrics is not None else None
        weight = self.s.backlog_debt * job.priority
        held = job.executors
        # Only a latency SLO pays for a backlog: a job working one off processes more than its
        # input, which meets any juice threshold. The input now, not the one the job must be
        # ready for, is what a cut falls behind; counts lent down to what it needs are free.
        if not rate or weight <= 0 or not job.slo.has_latency or min(points)[0] >= held:
            return points
        held_juice = predict(model, job, held, rate)[0]
        return [
            (n, value - weight * max(0.0, held_juice - predict(model, job, n, rate)[0]))
            if n < held
            else (n, value)
            for n, value in points
        ]

    def lent(
        self, job: JobView, model: JobModel, rate: float, need: int, rho: float
    ) -> list[tuple[int, float]]:
        """The counts ``job``, meeting its SLO while a job of its priority misses, offers below
        its ``need`` at the input ``rate`` it must be ready for (:meth:`ready_rate`; its recent
        peak unless ``peak_by_rises``) and below what it holds: down to what its input of the
        moment needs with ``headroom``, valued at that rate like any donor's.
        A job of the same priority is worth as much, and it misses now, while the executors
        kept for the peak pay only if the peak comes back before they could be moved back.
        The solver weighs them like any donor's, so a job of lower priority that misses too
        may take them, when it gains more than the lender loses at its peak. A job whose input
        is at its peak lends nothing, so jobs of one priority never trade executors on their
        models' noise alone (on `production`, with constant inputs, trading on the whole curve
        took one seed from 0.989 to 0.912 of the oracle, with 37 reverts)."""
        floor = self.lending_floor(job, model, rho)
        below = min(need, job.executors)
        if floor is None or floor >= below:
            return []
        # As fine as a growing job's curve (lent whole down to the floor, the executors a peer
        # needs less would sit idle and the lender would pay for them at its peak), and as
        # coarse as the curves of those giving way in a round of many jobs (_GRID_BUDGET).
        grid = min(self._grid, max(_GIVING_GRID, _GRID_BUDGET // len(self.jobs)))
        span = below - 1 - floor
        counts = sorted({floor + round(span * k / grid) for k in range(grid + 1)})
        return list(zip(counts, predicted_utilities(model, job, counts, rate), strict=True))

    def lending_floor(
        self, job: JobView, model: JobModel, rho: float, rate_floor: float = 0.0
    ) -> int | None:
        """The fewest executors ``job``, meeting its SLO, may lend down to: what its input of the
        moment, or ``rate_floor`` when higher, needs with ``headroom`` (``None`` without an
        input, or when no count does)."""
        rate = job.metrics.input_rate if job.metrics is not None else None
        if rate is None:
            return None
        rate = max(rate, rate_floor)
        return executors_needed(model, job, rate * (1 + self.s.headroom), rho=rho)

    def between_rises(
        self, job: JobView, model: JobModel, need: int, rho: float
    ) -> list[tuple[int, float]]:
        """What ``job``, meeting its SLO and of at least every missing job's priority, may
        lend below its ``need`` at its recent peak: the count its highest input of the last
        ``quiesce_s`` needs with ``headroom``, worth its priority times the chance that its
        input does not rise by more than ``headroom`` before executors could come back,
        ``2 × quiesce_s`` (:mod:`.rises`).
        A burst that comes a few times an hour then no longer holds, for the whole hour its
        peak is remembered, executors that a lower-priority job could earn with between
        bursts."""
        m = job.metrics
        if not self.s.lend_between_rises or m is None or not m.input_rate:
            return []
        rises = self.state.rises.get(job.job_id)
        if rises is None:
            return []
        chance = self.rise_chance(job)
        if chance >= 1.0:
            return []
        # Down to what the input of the last quiesce needs, not a dip of one round: a gold job
        # of the real-time trace lent 8 of its 17 executors down to what such a dip needed,
        # missed its SLO as its input came back, and the next move cut it to one.
        floor = self.lending_floor(job, model, rho, highest(rises))
        if floor is None or floor >= need:
            return []
        return [(floor, job.priority * (1.0 - chance))]

    def drain_worth(self, job: JobView) -> float:
        """What the executors of ``job`` are worth when no model can say: its utility, or,
        while it works off a backlog, its priority times the share of its demand (its input
        plus the backlog drained within ``drain_s``) they process; for a latency SLO at the
        utilisation it is sized for without batch timings, since keeping up does not yet
        meet such an SLO."""
        m = job.metrics
        if m is None or not self.draining(job):
            return job.utility
        assert m.processed_rate is not None
        wanted = demand(job, self.s.drain_s)
        covered = m.processed_rate / wanted if wanted else 1.0
        if job.slo.has_latency:
            covered *= GUESSED_UTILISATION
        return max(job.utility, job.priority * min(1.0, covered))

    def ready_rate(self, job: JobView) -> float | None:
        """The input ``job`` must be ready for: its recent peak, or its input now when higher,
        or with ``proactive`` the highest mean its trusted forecast gives over :meth:`lead_s`
        when higher still.
        With ``peak_by_rises``, its input now plus what its recent peak is above it times the
        chance that its input rises by more than ``headroom`` within the time executors lent
        now would take to come back, ``2 × quiesce_s`` (:mod:`.rises`; 1 for a job never seen
        rising, or with ``lend_between_rises`` off: the whole peak).

        A peak left by a burst that comes a few times an hour holds for the hour it is
        remembered what the job needs only if the next burst comes before executors could be
        moved back: a job of lower priority could earn with them meanwhile (`bursts-realtime`,
        a minute-long burst three times an hour: 0.862 → 0.934 of the oracle with the setting
        on). A job whose rises come ``2 × quiesce_s`` apart or closer keeps its whole peak."""
        rate = job.metrics.input_rate if job.metrics is not None else None
        if rate is None:
            return None
        peak = self.state.peaks.get(job.job_id)
        ready = rate
        if peak is not None and peak[0] > rate:
            ready = peak[0]
            if self.s.peak_by_rises:
                ready = rate + self.rise_chance(job) * (peak[0] - rate)
        forecast = self.forecast(job)
        if forecast is not None:
            # The mean, not the upper quantile: a growing job is sized with ``headroom`` over
            # it anyway, and the highest upper quantile of every minute of the lead is nearer a
            # 99th percentile (sized for it, top tiers took what bronze needed).
            ahead = forecast.highest_mean(self.now, self.lead_s(job))
            if ahead is not None and ahead > ready:
                ready = ahead
        return ready

    def rise_chance(self, job: JobView) -> float:
        """The chance that the input of ``job`` rises by more than ``headroom`` before
        executors lent now could come back (1 for a job never seen rising)."""
        # Lent executors come back after the move that lent them is judged (up to a quiesce)
        # and the move returning them has run (its executors start within another).
        rises = self.state.rises.get(job.job_id)
        return chance_within(rises, self.now_s, 2 * self.s.quiesce_s)

    def floor_set_aside(self, model: JobModel) -> JobModel | None:
        """What sizes a job missing its SLO whose model puts its per-batch floor above it: with
        ``price_moves`` the model without its overhead, else none (eq. 2.4).

        Eq. 2.4 spreads the job's priority evenly over its step, which for a saturated job
        reaches its maximum: the few executors that would meet its input are valued at a few
        per cent of it, and a silver job cut to one executor for a gold job's surge was never
        bought back (it earned nothing for the last 90 minutes of a run). Valued at its
        priority where its row cost says it keeps up, it is; but each such growth of a job
        that must reload its state stalls it, and only with its changes priced does the
        solver weigh that (without, `stateful-bursty` fell from 0.75 to 0.62 of the oracle)."""
        return model._replace(overhead_s=None) if self.s.price_moves else None

    def untrusted_target(self, job: JobView) -> int | None:
        """Eq. 2.4's step, and at least the executors the job registered with; ``None`` while
        the job has no capacity measured (a guess would only start a quiesce)."""
        capacity = job.metrics.capacity if job.metrics is not None else None
        if capacity is None and job.executors >= (job.initial_executors or 0):
            return None
        extra = paper_extra(capacity or 0.0, self.s.capacity_threshold, self.s.step)
        wanted = max(job.executors + extra, job.initial_executors or 0)
        return min(upper_bound(job), wanted) if wanted > job.executors else None

    def give_back(self) -> Plan | None:
        surplus: dict[str, float] = {}
        changes: list[Change] = []
        for job in self.jobs:
            keep = self.keep(job)
            if keep is None:
                continue
            since = self.state.surplus_since.get(job.job_id, self.now_s)
            surplus[job.job_id] = since
            # Executors held for a skew that has gone go back at once: the need they met has
            # gone with it, not passed with the input. (A job out of changes keeps its surplus,
            # and its time, until it has one.)
            due = self.now_s - since >= self.s.stabilization_s or self.skew_gone(job)
            if due and self.can_change(job):
                changes.append(Change(job.job_id, job.executors, keep, "give back: not needed"))
        for change in changes:
            del surplus[change.job_id]
        self.update(surplus_since=surplus)
        if not changes:
            return None
        self.act(changes)
        text = f"give back unused executors: {self.listed(changes)}"
        return self.plan(ActionKind.RECONFIGURE, text, changes)

    def skew_gone(self, job: JobView) -> bool:
        """``job`` was found skewed within ``stabilization_s`` and no finding holds it now."""
        found = self._found.get(job.job_id)
        return job.job_id in self.state.skewed_at and (
            found is None or found.finding is Finding.UNDER_PROVISIONED
        )

    def listed(self, changes: list[Change]) -> str:
        """The changes for a round's reason; a long move names its first few (every change is
        recorded as an action anyway)."""
        return _first_few(
            [f"{self.by_id[c.job_id].name} {c.from_executors}→{c.to_executors}" for c in changes]
        )

    def keep(self, job: JobView) -> int | None:
        """Executors ``job`` needs at its recent peak with ``keep_headroom``, when it holds
        enough more than that to give some back; otherwise ``None``."""
        if job.restart_on_resize or not meets_slo(job.utility, job.priority):
            return None
        model = self.trusted(job)
        peak = self.state.peaks.get(job.job_id)
        if model is None or peak is None:
            return None
        top = peak[0]
        forecast = self.forecast(job)
        if forecast is not None:  # (no give-back before a rise the forecast sees coming)
            ahead = forecast.highest_upper(self.now, forecast.step_s * len(forecast.upper))
            top = max(top, ahead or 0.0)
        rate = demand(job, self.s.drain_s, rate=top * (1 + self.s.keep_headroom))
        need = executors_needed(model, job, rate) if rate is not None else None
        if need is None:
            return None
        surplus = max(1, math.ceil(self.s.give_back_min_fraction * job.executors - 1e-9))
        return need if job.executors - need >= surplus else None

    def act(
        self,
        changes: list[Change],
        *,
        revert: bool = False,
        ran: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        """Record the move. ``ran``: for jobs that grow into executors that waited for room,
        the executors they run and those the move makes room for; each is part of the move,
        judged from what it ran, even when its allocation does not change."""
        ran = ran or {}
        counts = {c.job_id: (c.from_executors, c.to_executors) for c in changes}
        for job_id, (_, reached) in ran.items():
            counts.setdefault(job_id, (self.by_id[job_id].executors, reached))
        moved = {}
        for job_id, (before, after) in counts.items():
            job = self.by_id[job_id]
            rate = job.metrics.input_rate if job.metrics is not None else None
            moved[job_id] = MovedJob(
                before,
                after,
                job.utility,
                rate,
                by_model=self.trusted(job) is not None,
                processed_before=job.metrics.processed_rate if job.metrics is not None else None,
                ran_before=ran[job_id][0] if job_id in ran else None,
            )
        self.update(last_move=Move(self.now, moved, revert=revert))
        if self.s.changes_per_day > 0:
            changed = (c.job_id for c in changes if c.to_executors != c.from_executors)
            budgets = spend(
                self.state.budgets, changed, self.now_s, self.s.changes_per_day,
                self.s.change_burst,
            )  # fmt: skip
            self.update(budgets=budgets)
        if self.s.price_moves:
            self.begin_changes(changes)

    def begin_changes(self, changes: list[Change]) -> None:
        """Follow what each change costs its job (:mod:`.costs`), and say in the round's reason
        what the changed jobs' earlier changes cost them."""
        costs = dict(self.state.costs)
        priced: list[str] = []
        for change in changes:
            job = self.by_id[change.job_id]
            cost = costs.get(job.job_id)
            if cost is not None and cost.dip_s:
                priced.append(f"{job.name} {cost.dip_s:.0f} s")
            fraction = job.utility / job.priority if job.priority > 0 else 1.0
            ran = job.metrics.executors_reported if job.metrics is not None else None
            ran = change.from_executors if ran is None else ran
            costs[job.job_id] = change_costs.begin(
                cost, self.now_s, fraction, ran, self.s.model_alpha
            )
        self.update(costs=costs)
        if priced:
            self.notes.append(f"a change has cost (seconds of all it earns): {_first_few(priced)}")

    def plan(self, action: ActionKind, text: str, changes: list[Change]) -> Plan:
        reason = "; ".join([*self.notes, text])
        return Plan(
            action,
            reason,
            self.state.cluster_state,
            job_id=changes[0].job_id if len(changes) == 1 else None,
            changes=tuple(changes),
            total_utility=self.total,
            max_utility=self.maximum,
        )

    # -- resting ---------------------------------------------------------------------------

    def rest(self) -> Plan:
        st = self.state
        if st.cluster_state is ClusterState.CONVERGED:
            best = max(st.best_fraction or 0.0, self.fraction)
            if self.fraction < best * (1 - self.s.converged_drop):
                self.notes.append(
                    f"utility fraction {self.fraction:.3f} fell from {best:.3f}; "
                    "nothing the allocation can fix"
                )
                best = self.fraction
            self.update(best_fraction=best)
            return self.none("converged: nothing to gain")
        count = st.settle_count + 1
        if count >= self.s.settle_rounds:
            self.update(
                cluster_state=ClusterState.CONVERGED, settle_count=0, best_fraction=self.fraction
            )
            return self.none(f"nothing to gain for {count} round(s): converged")
        self.update(settle_count=count)
        return self.none(f"nothing to gain: settling ({count}/{self.s.settle_rounds})")


def _reached(offers: list[Offer], steps: list[Step]) -> float:
    """The offers' total value at the counts the steps reach (the others at what they hold)."""
    reached = {s.job.job_id: s.target for s in steps}
    return sum(o.value_at(reached.get(o.job.job_id, o.job.executors)) for o in offers)


def _first_few(items: list[str]) -> str:
    """The first :data:`_LISTED` of ``items`` for a round's reason, and how many more there are."""
    shown = ", ".join(items[:_LISTED])
    more = len(items) - _LISTED
    return f"{shown} and {more} more" if more > 0 else shown
