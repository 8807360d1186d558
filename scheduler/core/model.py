"""The named data the core hands between stages: what a round sees and what it decides.

All frozen; "no change" is a :class:`Plan` with action ``none`` and a reason, never ``None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import NamedTuple

from scheduler.core.report import TaskWindow
from scheduler.core.slo import SLO


class JobStatus(StrEnum):
    ADMITTED = "admitted"
    QUEUED = "queued"
    REMOVED = "removed"


class ActionKind(StrEnum):
    RECONFIGURE = "reconfigure"
    REDUCE = "reduce"
    REVERT = "revert"
    REPLACE = "replace"
    ADMIT = "admit"
    NONE = "none"


class ClusterState(StrEnum):
    CONVERGED = "converged"
    NOT_CONVERGED = "not_converged"


@dataclass(frozen=True)
class WindowValues:
    """What one stretch of reports says of a job: one sub-window (stored with the report at
    ingestion) or the sliding window a round decides from (:class:`JobMetrics`).

    ``None`` means the reports did not carry what the value needs.
    """

    utility: float
    juice: float | None = None
    juice_raw: float | None = None
    latency_ms: float | None = None
    capacity: float | None = None
    input_rate: float | None = None
    """Rows per second arriving at the sources."""
    processed_rate: float | None = None
    """Rows per second of batches that finished in the stretch."""


class BatchFit(NamedTuple):
    """Batch duration against rows, fitted by least squares over a window's batches."""

    overhead_s: float
    """The intercept: the fixed part of a batch's duration (at least 0)."""
    row_s: float
    """The slope: seconds a batch lasts per row, on the cores it ran on."""


@dataclass(frozen=True)
class JobMetrics(WindowValues):
    """A job's performance over the sliding window, as computed from its reports."""

    backlog_rows: float | None = None
    max_parallelism: int | None = None
    busy_core_s: float | None = None
    """Core-seconds the executors spent running tasks in the window."""
    mean_batch_s: float | None = None
    """Mean micro-batch duration."""
    mean_batch_rows: float | None = None
    """Mean rows per micro-batch."""
    batch_fit: BatchFit | None = None
    """Batch duration against rows over the window's batches, when their sizes vary enough to
    tell the fixed part from the per-row part."""
    trigger_interval_s: float | None = None
    """Mean time between micro-batch starts (the effective trigger interval), read within each
    report's list of batches (a report may list only its latest ones)."""
    behind_fraction: float | None = None
    """Fraction of the window's sub-windows in which the job fell behind (juice < 1)."""
    executors_reported: int | None = None
    steady: bool = True
    """Every report in the window ran on the same executor count."""
    windows: int = 0
    """How many report windows the values are built from."""
    seconds: float | None = None
    """The time the window's reports cover (the span rates are per)."""
    task_windows: tuple[TaskWindow, ...] = ()
    """The task figures of the window's reports that carry them, oldest first."""
    holds_state: bool | None = None
    """Whether the job keeps state between batches, by its latest report that tells."""


@dataclass(frozen=True)
class InputForecast:
    """A job's input rate ahead, fitted from its history outside the round (DESIGN §8): one
    value per ``step_s`` from ``start``. The round only reads it."""

    start: datetime
    """The moment the first values are for."""
    mean: tuple[float, ...]
    """Rows per second expected to arrive."""
    upper: tuple[float, ...]
    """The upper quantile of the same (the fitter's, 0.9 by default)."""
    naive: tuple[float, ...]
    """The seasonal-naive forecast of the same steps (the input one season earlier): what the
    forecast has to beat to be trusted."""
    error: float | None = None
    """The fitter's backtest over the recent history: its mean absolute error over that of
    the seasonal-naive forecast (below 1: it does better)."""
    step_s: float = 60.0
    method: str = ""
    """How it was fitted (the fitter's name for its method), for display."""

    def trusted(self, miss: float | None = None, naive: float | None = None) -> bool:
        """Whether the forecast may be acted on: its fitter's backtest beat the seasonal-naive
        forecast, and so did it on the input measured since, when ``miss`` and ``naive`` (its
        error and the seasonal-naive forecast's on that input) say."""
        if self.error is not None and self.error >= 1.0:
            return False
        return miss is None or naive is None or miss < naive

    def index(self, moment: datetime) -> int | None:
        """The step ``moment`` falls in, or ``None`` outside the forecast."""
        k = math.floor((moment - self.start).total_seconds() / self.step_s)
        return k if 0 <= k < len(self.mean) else None

    def highest_upper(self, begin: datetime, seconds: float) -> float | None:
        """The highest upper quantile from ``begin`` over the next ``seconds`` (as far as the
        forecast reaches; ``None`` when it does not cover ``begin``)."""
        return self._highest(self.upper, begin, seconds)

    def highest_mean(self, begin: datetime, seconds: float) -> float | None:
        """The highest mean from ``begin`` over the next ``seconds`` (as :meth:`highest_upper`)."""
        return self._highest(self.mean, begin, seconds)

    def peak_upper(self, begin: datetime, seconds: float) -> tuple[float, datetime] | None:
        """The highest upper quantile from ``begin`` over the next ``seconds`` and the start of
        its step (the first such step; as :meth:`highest_upper`)."""
        k = self._highest_step(self.upper, begin, seconds)
        if k is None:
            return None
        return self.upper[k], self.start + timedelta(seconds=k * self.step_s)

    def _highest(self, values: tuple[float, ...], begin: datetime, seconds: float) -> float | None:
        k = self._highest_step(values, begin, seconds)
        return None if k is None else values[k]

    def _highest_step(
        self, values: tuple[float, ...], begin: datetime, seconds: float
    ) -> int | None:
        first = self.index(begin)
        if first is None:
            return None
        last = min(len(values) - 1, first + math.ceil(seconds / self.step_s))
        top = first
        for k in range(first + 1, last + 1):
            if values[k] > values[top]:
                top = k
        return top


@dataclass(frozen=True)
class JobView:
    """One registered job as a round sees it."""

    job_id: str
    name: str
    tenant: str
    priority: float
    slo: SLO
    status: JobStatus
    executors: int
    """The allocation currently in force (the job's target)."""
    min_executors: int
    max_executors: int
    cores_per_executor: int
    memory_mb: int
    registered_at: datetime
    last_report_at: datetime | None = None
    metrics: JobMetrics | None = None
    restart_on_resize: bool = False
    """True when applying a new size restarts the application (spark-operator)."""
    initial_executors: int | None = None
    """Executors a queued job starts with once admitted; ``None``: use ``executors``."""
    forecast: InputForecast | None = None
    """The job's latest input forecast, when one has been fitted."""

    @property
    def utility(self) -> float:
        return self.metrics.utility if self.metrics is not None else 0.0

    def useful_executors(self) -> int:
        """Executors beyond this cannot run more tasks (DESIGN §2 "useful parallelism")."""
        metrics = self.metrics
        if metrics is None or not metrics.max_parallelism:
            return self.max_executors
        useful = math.ceil(metrics.max_parallelism / self.cores_per_executor)
        return useful if useful > 1 else 1


@dataclass(frozen=True)
class NodeView:
    name: str
    cores: float
    """Allocatable cores."""
    memory_mb: float
    cores_requested: float = 0.0
    """Cores held by pods or executors placed on the node."""
    memory_requested_mb: float = 0.0
    cpu_used: float | None = None
    """Measured CPU use in cores, when a metrics source exists."""
    ready: bool = True


@dataclass(frozen=True)
class ClusterView:
    nodes: tuple[NodeView, ...]

    @property
    def total_cores(self) -> float:
        return sum(n.cores for n in self.nodes if n.ready)

    @property
    def free_cores(self) -> float:
        return sum(max(0.0, n.cores - n.cores_requested) for n in self.nodes if n.ready)


@dataclass(frozen=True)
class Snapshot:
    """Everything one round decides from. Built by the loop; ``decide`` never does I/O."""

    round_number: int
    jobs: tuple[JobView, ...]
    cluster: ClusterView
    taken_at: datetime
    frozen_jobs: tuple[str, ...] = ()
    """Admitted jobs ``decide`` set aside this round (stale or not yet reported): they are not
    in ``jobs`` and no policy may touch them. Filled by ``decide``, not by the loop."""
    can_replace: bool = True
    """Whether the realizer can replace a job's executors (stop some, start as many anew)."""


@dataclass(frozen=True)
class Change:
    """One job's new allocation."""

    job_id: str
    from_executors: int
    to_executors: int
    reason: str


@dataclass(frozen=True)
class Replacement:
    """Executors of one job to stop and start anew (a new executor for each), its executor
    count unchanged."""

    job_id: str
    executor_ids: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Admission:
    """A status change for a newly registered job (admitted, or still queued with a reason)."""

    job_id: str
    status: JobStatus
    reason: str


@dataclass(frozen=True)
class Plan:
    """What a round decided: one action (or ``none``), with its reason and the changes."""

    action: ActionKind
    reason: str
    state: ClusterState
    job_id: str | None = None
    changes: tuple[Change, ...] = ()
    admissions: tuple[Admission, ...] = ()
    total_utility: float = 0.0
    max_utility: float = 0.0
    frozen_jobs: tuple[str, ...] = field(default=())
    """Jobs whose reports are stale; not touched this round."""
    replacements: tuple[Replacement, ...] = ()

    @staticmethod
    def no_change(
        reason: str, state: ClusterState, total: float = 0.0, maximum: float = 0.0
    ) -> Plan:
        return Plan(ActionKind.NONE, reason, state, total_utility=total, max_utility=maximum)
