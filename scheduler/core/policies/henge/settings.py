"""Settings of Henge's state machine (DESIGN §3). Defaults are the paper's values.

The four switches at the end are what the product policy ``henge`` does beyond the paper; they
default to off here (``henge-paper``) and the ``henge`` policy turns them on. With all four off,
``henge`` behaves exactly as ``henge-paper``.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.core.policy import PolicySettingsError


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PolicySettingsError(message)


@dataclass(frozen=True)
class HengeSettings:
    round_interval_s: float = 10.0
    """Seconds between rounds (§2.6.1). The loop runs the rounds; kept here for reference."""
    quiesce_s: float = 60.0
    """After an action, wait this long before judging it or acting again (§2.6.1)."""
    min_gain: float = 0.05
    """A reconfigured job whose utility rose by less than this fraction of its priority, and that
    still misses its SLO, is blacklisted (§2.6.1)."""
    blacklist_ttl_s: float = 3600.0
    """How long a blacklisted job is skipped as a candidate (1 h, §2.6.1)."""
    reduction_fraction: float = 0.8
    """A reduce cuts each eligible job's executors by this fraction (80 %, §2.6.2)."""
    rate_change: float = 0.2
    """A job's input rate moving by more than this fraction since its reduction is an external
    change that clears its reduction mark (§2.6.2)."""
    converged_drop: float = 0.05
    """In ``converged``, a relative drop of the utility fraction (total / maximum) by more than
    this, against the fraction it converged at, forgets the history and goes to
    ``not_converged`` (§2.6.3)."""
    settle_rounds: int = 4
    """Rounds at maximum utility, after quiescing, before going to ``converged`` (§2.6.1)."""
    capacity_threshold: float = 0.3
    """A job whose capacity is above this is congested (§2.5.2)."""
    step: int = 10
    """Multiplier of eq. 2.4: extra executors = ceil((capacity / threshold - 1) * step)."""
    drop_tolerance: float = 0.0
    """Total utility must fall by more than this fraction of the maximum (the summed priorities
    of the jobs counted both when the reconfiguration was made and when it is judged) to count
    as dropped after it (0: any drop, as in the paper)."""
    history_size: int = 50
    """Configurations kept for reverting; the oldest (never the best) is dropped beyond it."""

    model_sizing: bool = False
    """``henge``: size a reconfiguration from the job's fitted model (smallest executor count
    meeting the SLO at ``headroom`` more load) instead of eq. 2.4."""
    blacklist_unattainable: bool = False
    """``henge``: blacklist at once a job whose SLO the model says no allowed executor count can
    meet, when more executors would not raise its utility by ``min_gain`` either."""
    give_back: bool = False
    """``henge``: in ``converged``, take back executors a job meeting its SLO does not need
    (one job per round; undone and blacklisted for give-back if the job then misses its SLO)."""
    wake_on_new_job: bool = False
    """``henge``: in ``converged``, a job that arrived after convergence and misses its SLO sends
    the cluster to ``not_converged`` (the paper waits for a drop above ``converged_drop``)."""

    headroom: float = 0.2
    """Model sizing targets the SLO at this much more input than measured."""
    give_back_headroom: float = 1.0
    """Give-back keeps what the model says meets the SLO at this much more input (1.0: twice the
    measured input), so that a spike does not find the job short (measured in docs/benchmarks.md:
    0.2 lost a third of the utility in ``spike``)."""
    model_min_windows: int = 3
    """Reports folded into a job's model before the model is trusted."""
    model_alpha: float = 0.3
    """Weight of the newest report in the model's moving averages."""
    give_back_min_fraction: float = 0.2
    """Give back only when at least this fraction of the job's executors (and at least one) is
    surplus, to avoid churn."""

    def __post_init__(self) -> None:
        _require(self.round_interval_s > 0, "round_interval_s must be > 0")
        _require(self.quiesce_s >= 0, "quiesce_s must be >= 0")
        _require(0 <= self.min_gain <= 1, "min_gain must be in [0, 1]")
        _require(self.blacklist_ttl_s >= 0, "blacklist_ttl_s must be >= 0")
        _require(0 < self.reduction_fraction < 1, "reduction_fraction must be in (0, 1)")
        _require(self.rate_change > 0, "rate_change must be > 0")
        _require(0 <= self.converged_drop <= 1, "converged_drop must be in [0, 1]")
        _require(self.settle_rounds >= 0, "settle_rounds must be >= 0")
        _require(0 < self.capacity_threshold <= 1, "capacity_threshold must be in (0, 1]")
        _require(self.step >= 1, "step must be >= 1")
        _require(0 <= self.drop_tolerance < 1, "drop_tolerance must be in [0, 1)")
        _require(self.history_size >= 1, "history_size must be >= 1")
        _require(self.headroom >= 0, "headroom must be >= 0")
        _require(self.give_back_headroom >= 0, "give_back_headroom must be >= 0")
        _require(self.model_min_windows >= 1, "model_min_windows must be >= 1")
        _require(0 < self.model_alpha <= 1, "model_alpha must be in (0, 1]")
        _require(0 <= self.give_back_min_fraction < 1, "give_back_min_fraction must be in [0, 1)")

    @property
    def uses_model(self) -> bool:
        return self.model_sizing or self.blacklist_unattainable or self.give_back


PRODUCT_SWITCHES: dict[str, bool] = {
    "model_sizing": True,
    "blacklist_unattainable": True,
    "give_back": True,
    "wake_on_new_job": True,
}
"""Everything ``henge`` can turn on over ``henge-paper``."""

PRODUCT_DEFAULTS: dict[str, bool | float] = {
    # Measured in the simulator (docs/benchmarks.md): the online model misjudges jobs that are
    # behind, so sizing from it, and blacklisting the SLOs it calls unattainable, cost utility
    # in several scenarios; both stay available but off. Give-back and waking on a new job
    # raised utility or saved cores everywhere.
    "model_sizing": False,
    "blacklist_unattainable": False,
    "give_back": True,
    "wake_on_new_job": True,
}
"""What the registered ``henge`` policy turns on by default."""
