"""Settings of the product policy ``henge`` (DESIGN §3 "Sizing", the ``henge`` list).

The state machine's constants keep the paper's values; the rest say how the per-job models are
trusted, how far ahead of the load the allocation is sized, and how calm scaling down is. Each
departure from the paper can be switched off on its own (see the switches at the end).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.core.policies.base import require


@dataclass(frozen=True)
class ProductSettings:
    quiesce_s: float = 60.0
    """Longest wait after a move before it is judged and the next one is made (§2.6.1). With
    ``adaptive_quiesce`` the wait ends earlier, once the moved jobs run at their new size."""
    min_gain: float = 0.05
    """A move is made only when the models predict it raises the total utility by at least this
    fraction of the priority of a job it helps; a grown job that gained less than this (against
    what it would have done without the move) and still misses its SLO failed to grow."""
    blacklist_ttl_s: float = 3600.0
    """A job whose growth failed while its executors were not busy is not grown again for this
    long (1 h, §2.6.1): more executors do not help a job that does not use the ones it has."""
    converged_drop: float = 0.05
    """In ``converged``, the utility fraction falling this far below the best fraction reached
    since converging resets that reference to the fraction now (``henge`` keeps no history of
    configurations to revert to; §2.6.3). The reference only rises while the state lasts."""
    settle_rounds: int = 4
    """Rounds with nothing to do before ``not_converged`` becomes ``converged`` (§2.6.1)."""
    capacity_threshold: float = 0.3
    """A job whose capacity is above this is congested (§2.5.2); eq. 2.4 sizes from it. A
    grown job that failed to gain is blacklisted when busy at most this fraction of the
    utilisation its SLO allows (its model's; full use without one)."""
    step: int = 10
    """Multiplier of eq. 2.4, used for jobs whose model is not trusted."""

    headroom: float = 0.2
    """A job growing is sized for this much more than its recent peak input (or its input now,
    when higher), so that a load moving as it recently did needs no new move."""
    keep_headroom: float = 0.5
    """A job giving executors back keeps what meets its SLO at this much more than its recent
    peak input (scaling down is lazy: the peak, plus a margin, plus ``stabilization_s``)."""
    drain_s: float = 120.0
    """A job with a backlog is sized to drain it within this many seconds, on top of its input."""
    stabilization_s: float = 3600.0
    """A surplus must last this long before it is given back, and the recent peak input decays
    with this time constant (the Flink autoscaler's scale-down interval, 1 h). Jobs missing
    their SLO take surplus executors at once; this only delays returning them to the pool."""
    give_back_min_fraction: float = 0.2
    """Give back only when at least this fraction of a job's executors (and at least one) is
    surplus."""
    model_min_windows: int = 3
    """Reports folded into a job's model before it is used."""
    model_alpha: float = 0.3
    """Weight of the newest report in a model's moving averages."""
    model_max_error: float = 0.15
    """A job's model is used only while its recent prediction error (predicted against measured
    utility at the job's allocation and input, as a fraction of its priority, averaged with
    ``model_alpha``) is at most this; otherwise the job is sized by eq. 2.4."""
    priority_epsilon: float = 1e-6
    """Utility credited to a job's current allocation in the solver, as a fraction of its
    priority: among allocations of equal utility the one that moves nothing wins."""

    preempt: bool = True
    """Take executors from the jobs whose loss costs the least utility per core (lowest
    priority first) when free cores are not enough; off: grow from free cores only."""
    judge_by_cause: bool = True
    """Judge a move against what the moved jobs would have done without it at the input they
    now have (their models); off: against the utility before the move, as the paper does."""
    adaptive_quiesce: bool = True
    """End the quiesce once every moved job reports its new executor count and a further
    report window has passed; off: always wait ``quiesce_s``."""
    give_back: bool = True
    """Take back executors a job has not needed for ``stabilization_s``."""
    lend_between_rises: bool = True
    """A job meeting its SLO whose priority is at least every missing job's may lend what it
    keeps for its recent peak, down to what its highest input of the last ``quiesce_s`` needs
    with ``headroom``, valued at its priority times the chance that its input does not rise by
    more than ``headroom`` (within ``quiesce_s``) in the next ``2 × quiesce_s``, the time lent
    executors take to come back (read from how often it lately has); off: it keeps what its
    peak needs."""
    grow_to_slo: bool = False
    """A move that brings a job missing its SLO to it, by the job's model, is made when it is the
    best allocation (what the others lose counted) even if it raises the job's utility by less
    than ``min_gain`` of its priority; off: every move must gain that much, and a job may stay a
    few per cent short of its SLO for as long as its input holds (a top-tier job on
    ``flash-crowd``, one executor short, 4 % of its priority)."""
    steady_error: bool = False
    """Measure a model's error only on windows in which the job is not working off a backlog
    faster than its input (after its start, a stall or a rise): the model predicts the steady
    state, and a job catching up is not in it however right its row cost is, so a new job
    admitted behind is trusted once it has caught up instead of once the error of its first
    windows has decayed; off: every window counts."""
    peak_by_rises: bool = False
    """The input a job must be ready for (at which its counts are valued, its need read and its
    growth sized) is its input now plus what its recent peak is above it times the same chance
    of a rise within ``2 × quiesce_s`` (the whole peak while that chance is unknown); off: its
    recent peak. On, a job whose bursts are rare keeps little of a passed burst's size, and
    jobs whose input rises every few minutes lend more and take it back more often (see
    ``docs/benchmarks.md``, "Weighing the peak by the chance of a rise"); a job whose rises come
    ``2 × quiesce_s`` apart or closer keeps its whole peak. Give-backs still keep what the whole
    peak needs. Without ``lend_between_rises`` no rises are counted, and the whole peak is
    kept."""

    backlog_debt: float = 1.0
    """A cut that its model says leaves a job processing less of its input than at what it
    holds also costs this times its priority times the share of its input it would leave
    unprocessed: the rows it falls behind on build a backlog that it must work off once its
    executors are back, missing its latency SLO meanwhile. 1 counts the time the job would
    take to work it off with capacity to spare of one input's worth (twice the rows a second
    that come in); 0: a cut costs only the utility the job loses while it lasts. Jobs without a
    trusted model (their capacity is unknown) or without a latency SLO (a job working off a
    backlog processes more than its input, which meets any juice threshold) are not charged."""

    price_moves: bool = False
    """Price every change of a job's executors at what its earlier changes cost it: the utility
    it lost below what was expected of it until it settled (a stateful job's reload stall and
    the backlog after it, executors slow to start), a moving average over its changes
    (:mod:`.costs`). In the solver, each count other than the one a job holds is charged its
    priority times that loss over the time its new allocation is expected to hold (the time
    between the rises of its input, as :mod:`.rises` counts them, within ``quiesce_s`` and
    ``stabilization_s``), so that a move is made only where its gain over that time outweighs
    what it costs, and the cheapest jobs to change give way first; before a job's first change
    has been measured, the loss that change has had so far is its price. A job is left where
    it is until its metrics window holds only batches after the stall of its last change, and
    its model's per-batch overhead is kept until it has settled; a move that would be reverted
    while its jobs may still be stalled waits for them to recover, for their usual time to
    settle at most (``5 × quiesce_s``), so that a stall it was expected to cause does not revert
    it, and a move that holds is kept at once. A job whose reports say it keeps no state (a
    change reloads nothing) may grow meanwhile, but gives nothing away: what it earns then
    tells what the change cost, not what its executors are worth. A job missing its SLO
    whose model puts its per-batch overhead above what the SLO allows is sized by its row cost
    (for throughput at a guessed utilisation) instead of eq. 2.4. Off (the
    default until it holds on every built-in scenario; see ``docs/benchmarks.md``): changes are
    free and a move is judged after ``quiesce_s`` at the most."""

    changes_per_day: float = 0.0
    """Above 0: ration each job's changes to this many a day on average, at most
    ``change_burst`` in a row (a token bucket, :mod:`.budget`). A job with less than one change
    left is held where it is (no growth, no cut, no give-back) until it has earned one; a move
    that is reverted spends one change of each of its jobs twice. For users who count each
    rescale (every change of a Spark job's executors restarts tasks and loses cached
    partitions): the input's minute-to-minute noise is then met with the executors the job
    holds, at the utility that costs (``docs/benchmarks.md``, "A budget of changes"). 0 (the
    default): no budget."""
    change_burst: float = 2.0
    """With ``changes_per_day``: the most changes a job may save up, and its budget at its
    start: a change and its undoing (a lend and its return, a move and its revert)."""

    proactive: bool = False
    """Make each job whose input forecast is trusted ready for the forecast's highest mean over
    the time a move needs to take effect (``quiesce_s`` to judge it, plus the job's usual time
    to settle after a change with ``price_moves``, else a second ``quiesce_s``), when above its
    recent peak; growth adds ``headroom`` as always. A job meeting its SLO that would miss it
    there is grown ahead of the rise, and a give-back keeps what the highest upper quantile of
    the whole forecast needs. A forecast is trusted while
    its fitter's backtest error and its error on the job's measured input since (a moving
    average with ``model_alpha``) are both below those of the seasonal-naive forecast;
    otherwise the reactive rules run unchanged. Off: forecasts are ignored."""

    diagnose: bool = False
    """Before growing a job that misses its SLO, ask why from its tasks (Dhalion): a slow
    executor is replaced instead of the job grown; a skewed stage holds the job's growth (more
    executors will not shorten its longest task) until the skew goes. Needs the agent's task
    figures; a job without them is sized as before. Off: every miss is met with growth."""
    slow_executor_factor: float = 1.5
    """With ``diagnose``: an executor is slow when its mean task time is at least this many
    times the median of its job's other executors' (Spark's speculation multiplier)."""
    skew_factor: float = 5.0
    """With ``diagnose``: a stage is skewed when its largest partition holds at least this many
    times its even share of the rows (Spark's adaptive execution's skewed-partition factor) and
    its longest task outlasts the stage's work spread over the job's cores."""
    diagnosis_windows: int = 3
    """With ``diagnose``: a finding must hold in each of this many latest report windows."""

    def __post_init__(self) -> None:
        require(self.quiesce_s >= 0, "quiesce_s must be >= 0")
        require(0 <= self.min_gain <= 1, "min_gain must be in [0, 1]")
        require(self.blacklist_ttl_s >= 0, "blacklist_ttl_s must be >= 0")
        require(0 <= self.converged_drop <= 1, "converged_drop must be in [0, 1]")
        require(self.settle_rounds >= 0, "settle_rounds must be >= 0")
        require(0 < self.capacity_threshold <= 1, "capacity_threshold must be in (0, 1]")
        require(self.step >= 1, "step must be >= 1")
        require(self.headroom >= 0, "headroom must be >= 0")
        require(self.keep_headroom >= 0, "keep_headroom must be >= 0")
        require(self.drain_s > 0, "drain_s must be > 0")
        require(self.stabilization_s >= 0, "stabilization_s must be >= 0")
        require(0 <= self.give_back_min_fraction < 1, "give_back_min_fraction must be in [0, 1)")
        require(self.model_min_windows >= 1, "model_min_windows must be >= 1")
        require(0 < self.model_alpha <= 1, "model_alpha must be in (0, 1]")
        require(self.model_max_error >= 0, "model_max_error must be >= 0")
        require(0 <= self.priority_epsilon < 0.01, "priority_epsilon must be in [0, 0.01)")
        require(self.backlog_debt >= 0, "backlog_debt must be >= 0")
        require(self.changes_per_day >= 0, "changes_per_day must be >= 0 (0: no budget)")
        require(self.change_burst >= 1, "change_burst must be >= 1")
        require(self.slow_executor_factor > 1, "slow_executor_factor must be > 1")
        require(self.skew_factor > 1, "skew_factor must be > 1")
        require(self.diagnosis_windows >= 1, "diagnosis_windows must be >= 1")
