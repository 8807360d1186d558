"""Request and response bodies of the ``/v1`` API (DESIGN §5.1)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from scheduler.core.slo import LatencyStat, Shape
from scheduler.round.store import ActionRecord, RoundRecord

Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="Letters, digits, '.', '_' and '-'; starts with a letter or digit.",
    ),
]
# Upper bounds far above anything real (10^15 rows or core-ms in one window, 10^10 ms is 115
# days): a larger value is a broken agent, and stored it would overflow whatever is derived.
Count = Annotated[float, Field(ge=0, le=1e15, allow_inf_nan=False)]
Millis = Annotated[float, Field(ge=0, le=1e10, allow_inf_nan=False)]
Actuator = Literal["agent", "spark-operator", "dry-run", "simulated"]


class Strict(BaseModel):
    """Bodies people and agents write: an unknown field, NaN or infinity is refused (422 naming
    it), so that a misspelt or misplaced field never passes as an absent one."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# ---- tenants ---------------------------------------------------------------------------------


class TenantCreate(Strict):
    name: Name


class TenantOut(BaseModel):
    id: str
    name: str
    created_at: datetime


class TenantCreated(TenantOut):
    token: str = Field(description="The tenant's bearer token. Shown once; store it safely.")


# ---- jobs ------------------------------------------------------------------------------------


class UtilityIn(Strict):
    shape: Shape = Shape.KNEE
    juice_zero_at: float | None = Field(None, ge=0, lt=1)
    latency_zero_at_ms: float | None = Field(None, gt=0)
    step_low: float | None = Field(None, ge=0, lt=1)
    juice_points: list[tuple[float, float]] | None = None
    latency_points: list[tuple[float, float]] | None = None


class SLOIn(Strict):
    latency_ms: float | None = Field(None, gt=0, description="Latency threshold in ms.")
    latency_stat: LatencyStat = LatencyStat.MEAN
    juice: float | None = Field(None, gt=0, le=1, description="Juice threshold in (0, 1].")
    utility: UtilityIn = Field(default_factory=UtilityIn)


class ExecutorsIn(Strict):
    # Declared min, max, initial so each check can see the fields it compares against.
    min: int = Field(1, ge=0, le=10_000)
    max: int = Field(40, ge=1, le=10_000)
    initial: int = Field(2, ge=0, le=10_000)
    cores: int = Field(1, ge=1, le=256)
    memory_mb: int = Field(2048, ge=128, le=1_048_576)

    @field_validator("max")
    @classmethod
    def _max_not_below_min(cls, value: int, info: ValidationInfo) -> int:
        low = info.data.get("min")
        if low is not None and value < low:
            raise ValueError(f"max ({value}) must be at least min ({low})")
        return value

    @field_validator("initial")
    @classmethod
    def _initial_within_bounds(cls, value: int, info: ValidationInfo) -> int:
        low, high = info.data.get("min"), info.data.get("max")
        if low is not None and high is not None and not low <= value <= high:
            raise ValueError(f"initial ({value}) must be within [min, max] = [{low}, {high}]")
        return value


class JobCreate(Strict):
    name: Name
    priority: float = Field(gt=0, le=1e9)
    slo: SLOIn
    executors: ExecutorsIn = Field(default_factory=ExecutorsIn)
    actuator: Actuator = "agent"


class JobPatch(Strict):
    priority: float | None = Field(None, gt=0, le=1e9)
    slo: SLOIn | None = None
    executors: ExecutorsIn | None = None
    actuator: Actuator | None = None


class ExecutorsOut(BaseModel):
    initial: int
    min: int
    max: int
    cores: int
    memory_mb: int
    target: int


class JobOut(BaseModel):
    id: str
    tenant_id: str
    name: str
    priority: float
    slo: dict[str, Any]
    executors: ExecutorsOut
    actuator: str
    status: str
    status_reason: str
    utility: float | None
    juice: float | None
    latency_ms: float | None
    capacity: float | None
    last_report_at: datetime | None
    created_at: datetime
    updated_at: datetime


class JobCreated(JobOut):
    agent_token: str = Field(description="The job's agent token. Shown once.")


# ---- reports ---------------------------------------------------------------------------------


class SourceIn(Strict):
    name: str = Field(min_length=1, max_length=200)
    arrived_rows: Count | None = None
    processed_rows: Count
    backlog_rows: Count | None = None


class BatchIn(Strict):
    start: datetime
    end: datetime
    rows: Count
    backlog_at_start: Count | None = None

    @field_validator("end")
    @classmethod
    def _not_before_start(cls, value: datetime, info: ValidationInfo) -> datetime:
        start = info.data.get("start")
        if start is not None and value < start:
            raise ValueError("end is before start")
        return value


class LatencyIn(Strict):
    mean: Millis | None = None
    p95: Millis | None = None
    p99: Millis | None = None


class EdgeIn(Strict):
    parent: str = Field(min_length=1, max_length=200)
    child: str = Field(min_length=1, max_length=200)
    sent: Count
    executed: Count


class ExecutorTasksIn(Strict):
    """What one executor's tasks did in the window."""

    id: str = Field(min_length=1, max_length=200)
    tasks: Count
    task_ms: Millis
    rows: Count | None = None
    host: str | None = Field(None, max_length=500)
    running: int | None = Field(None, ge=0, le=1_000_000, description="Tasks running at the end.")


class StageTasksIn(Strict):
    """One stage of the window's micro-batches (its runs' figures averaged)."""

    name: str = Field(min_length=1, max_length=500)
    tasks: Count
    median_task_ms: Millis
    max_task_ms: Millis
    runs: int = Field(1, ge=1, le=1_000_000)
    largest_partition_share: float | None = Field(None, ge=0.0, le=1.0)


class StateIn(Strict):
    """What the queries' state operators hold (reported by the agent): all zero, the job keeps
    no state, which ``henge``'s ``price_moves`` reads."""

    rows: Count | None = None
    memory_bytes: Count | None = None


class ReportIn(Strict):
    window_start: datetime
    window_end: datetime
    executors: int = Field(ge=0, le=100_000)
    cores_per_executor: int = Field(1, ge=1, le=1024)
    busy_core_ms: Count
    max_parallelism: int | None = Field(None, ge=1, le=1_000_000)
    sources: list[SourceIn] = Field(default_factory=list, max_length=1000)
    batches: list[BatchIn] | None = Field(None, max_length=10_000)
    latency_ms: LatencyIn | None = None
    edges: list[EdgeIn] | None = Field(None, max_length=10_000)
    state: StateIn | None = None
    executor_tasks: list[ExecutorTasksIn] | None = Field(
        None,
        max_length=10_000,
        description="Per executor: tasks finished, their run time and rows (for diagnosis).",
    )
    stages: list[StageTasksIn] | None = Field(
        None,
        max_length=1000,
        description="Per stage of the micro-batches: median and longest task, largest "
        "partition's share of the rows (for diagnosis).",
    )

    @field_validator("window_start", "window_end")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("needs a time zone (e.g. a trailing Z)")
        return value

    @field_validator("window_end")
    @classmethod
    def _after_start(cls, value: datetime, info: ValidationInfo) -> datetime:
        start = info.data.get("window_start")
        if start is not None and value <= start:
            raise ValueError("window_end must be after window_start")
        return value


REPLACE_EXECUTORS = Field(
    default_factory=list,
    description="Executors the scheduler asks the agent to stop (a new one starts for each, the "
    "total unchanged); answered for a window's time after a round asks.",
)


class ReportAck(BaseModel):
    target_executors: int
    round: int
    duplicate: bool = False
    replace_executors: list[str] = REPLACE_EXECUTORS


MAX_BATCH_WINDOWS = 100
"""Windows one batch may carry (the whole request must also fit in ``max_report_bytes``)."""


class ReportBatchIn(Strict):
    reports: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=MAX_BATCH_WINDOWS,
        description="Windows, oldest first, each one a report as `POST /v1/jobs/{id}/reports` "
        "takes it (`ReportIn`). Each is validated and stored on its own: a window refused does "
        "not stop the others.",
        json_schema_extra={"items": {"$ref": "#/components/schemas/ReportIn"}},
    )


class WindowResult(BaseModel):
    status: Literal["stored", "duplicate", "rejected"] = Field(
        description="`stored`; `duplicate` (already stored: acknowledged, nothing new); "
        "`rejected` (never stored: invalid, or older than a stored window; do not resend)."
    )
    window_end: datetime | None = Field(None, description="The window's end, when it is valid.")
    detail: Any = Field(None, description="Why it was rejected, in FastAPI's error format.")


class ReportBatchAck(BaseModel):
    target_executors: int
    round: int
    results: list[WindowResult] = Field(description="One per window, in the request's order.")
    replace_executors: list[str] = REPLACE_EXECUTORS


# ---- history, rounds, cluster ----------------------------------------------------------------


class HistoryPoint(BaseModel):
    window_start: datetime
    window_end: datetime
    executors: int
    utility: float | None
    juice: float | None
    juice_raw: float | None
    latency_ms: float | None
    capacity: float | None
    input_rate: float | None
    processed_rate: float | None


class JobHistory(BaseModel):
    job_id: str
    points: list[HistoryPoint]


class InputMinuteOut(BaseModel):
    """A job's input over one minute (rows per second), on the clock of its agent."""

    minute: datetime
    arrived_rate: float
    processed_rate: float
    seconds: float
    """Seconds of report windows behind the rates (60 when none was missed)."""


class JobInput(BaseModel):
    job_id: str
    minutes: list[InputMinuteOut]


class JobForecastOut(BaseModel):
    """A job's latest input forecast: rows per second expected per step from ``start``, with an
    upper quantile and the seasonal-naive forecast it has to beat."""

    job_id: str
    fitted_at: datetime
    start: datetime
    step_s: float
    method: str
    mean: list[float]
    upper: list[float]
    naive: list[float]
    error: float | None = Field(
        description="The fitter's backtest: its mean absolute error over the seasonal-naive "
        "forecast's on the recent history (below 1: better)."
    )
    recent_error: float | None = Field(
        description="The same on the minutes measured since the forecast starts (null: none yet)."
    )
    trusted: bool = Field(
        description="Both errors are below 1: the henge policy acts on it when proactive."
    )


class OutcomeOut(BaseModel):
    """What one executor count is predicted to give at one input rate."""

    juice: float
    latency_ms: float | None = Field(
        description="The SLO's latency statistic (null: unbounded, as the input outruns the "
        "count, or unknown for a job without a latency objective)."
    )
    utility: float
    meets_slo: bool


class OptionOut(BaseModel):
    executors: int
    now: OutcomeOut = Field(description="At the input of the job's current window.")
    peak: OutcomeOut | None = Field(description="At the forecast's peak (null: no forecast).")
    core_hours_per_day: float


class PeakOut(BaseModel):
    input_rate: float = Field(description="The forecast's highest upper quantile, rows/s.")
    at: datetime
    trusted: bool = Field(description="The forecast has beaten the seasonal-naive one.")


class JobOptionsOut(BaseModel):
    """What each executor count would give the job, from the model the scheduler keeps of it;
    no numbers while that model is not trusted (``reason`` says why)."""

    job_id: str
    trusted: bool
    reason: str
    input_rate: float | None
    peak: PeakOut | None = Field(
        description="The peak of the job's input forecast over the next 24 h, as far as the "
        "forecast reaches."
    )
    held: int = Field(description="Executors the job holds now.")
    meets_now: int | None = Field(
        description="The smallest count that meets the SLO at the input now (null: none)."
    )
    meets_peak: int | None = Field(
        description="The smallest count that meets it now and at the peak (null: none, or no "
        "forecast)."
    )
    options: list[OptionOut]


class ExecutorLookOut(BaseModel):
    id: str
    host: str | None
    tasks: float
    mean_task_ms: float | None
    slowness: float | None = Field(
        description="Its mean task time over the lower quartile of the job's other executors' "
        "(null: alone or idle)."
    )


class StageLookOut(BaseModel):
    name: str
    tasks: float = Field(description="Tasks per run of the stage.")
    median_task_ms: float
    max_task_ms: float
    largest_partition_share: float | None
    unevenness: float = Field(
        description="The largest partition's rows over its even share (without partition "
        "rows: the longest task over the median)."
    )
    bounds_stage: bool = Field(
        description="The longest task outlasts the stage's work spread over the job's cores: "
        "more executors cannot shorten the stage."
    )


class JobDiagnosisOut(BaseModel):
    """Why the job runs as it does, from its tasks: a slow executor, skew, or neither."""

    job_id: str
    finding: Literal["slow_executor", "skew", "undecided", "under_provisioned"] | None = Field(
        description="null: the job's reports carry no task figures."
    )
    reason: str | None
    acted_on: bool = Field(description="Whether the scheduler acts on the finding now.")
    note: str = Field(description="What the scheduler does with it.")
    slow_executors: list[str]
    hosts: list[str] = Field(description="The nodes the slow executors run on.")
    stage: str | None = Field(description="The skewed stage.")
    factor: float | None = Field(
        description="How many times slower the slow executors are, or how uneven the stage."
    )
    useful_executors: int | None = Field(
        description="With skew: the most executors that still shorten the job's batches."
    )
    windows: int = Field(description="Report windows with task figures the finding reads.")
    executors: list[ExecutorLookOut] = Field(description="The latest window, slowest first.")
    stages: list[StageLookOut] = Field(
        description="Each stage in the latest window it finished in, most uneven first."
    )


class JobActionOut(BaseModel):
    """One action on a job, for its page (``/v1/rounds`` is the admin's)."""

    round: int
    at: datetime
    kind: str
    from_executors: int
    to_executors: int
    reason: str


@dataclass(frozen=True)
class RoundOut(RoundRecord):
    """One round as ``/v1/rounds`` lists it: the stored round with its actions."""

    actions: tuple[ActionRecord, ...] = ()


class JobNeedOut(BaseModel):
    job_id: str
    name: str
    tenant: str
    priority: float
    held: int = Field(description="Executors the job holds now.")
    cores_per_executor: int
    executors: list[int] = Field(description="Executors it needs at each point of the horizon.")
    sized: bool = Field(
        description="Its model sized it; otherwise (``note`` says why) it is counted at what it "
        "holds."
    )
    note: str
    forecast: bool = Field(
        description="A trusted forecast gave its input ahead; otherwise its input now is held."
    )


class TierNeedOut(BaseModel):
    priority: float
    jobs: list[str]
    cores: list[int] = Field(description="Cores the tier's jobs need at each point.")
    peak_cores: int
    short_cores: int = Field(
        description="At the tier's worst point, the cores its jobs need that higher tiers and "
        "the minimums leave no room for (0: it fits all along)."
    )
    short_at: datetime | None
    missing: list[str] = Field(description="Its jobs that would miss their SLO at that point.")


class CapacityOut(BaseModel):
    """The cores every admitted job's SLO needs over the horizon, per priority tier, against
    the cores planned with (the cluster's, or a what-if)."""

    start: datetime
    step_s: float = Field(description="Seconds between two points of the horizon.")
    horizon_s: float
    source: str = Field(description="Where the cluster's cores come from.")
    cluster_cores: float = Field(description="The ready nodes' cores now.")
    capacity_cores: float = Field(
        description="The cores planned with: the cluster's, less ``without_nodes`` of its "
        "largest nodes, or ``cores`` when given."
    )
    peak_cores: int = Field(description="The most cores the jobs need at one point.")
    tightest_at: datetime = Field(description="The start of that point.")
    fits: bool = Field(description="Every tier gets what it needs all along the horizon.")
    first_dropped: float | None = Field(
        description="The priority of the lowest tier that misses: the first to give way as "
        "the cores shrink (null: none misses)."
    )
    total: list[int] = Field(description="Cores all the jobs need at each point.")
    tiers: list[TierNeedOut] = Field(description="Highest priority first.")
    jobs: list[JobNeedOut]


class ClusterOut(BaseModel):
    source: str
    nodes: int
    total_cores: float
    allocated_cores: float
    free_cores: float
    state: str
    policy: str
    last_round: int | None
    total_utility: float
    max_utility: float
    jobs: dict[str, int]
