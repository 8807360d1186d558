"""Admission of newly registered jobs (DESIGN §3 step 8, thesis §2.6.4).

Three rules:

- ``slos-met`` (Henge): a queued job is admitted when every running job meets its SLO (jobs
  still warming up, without metrics, count as not yet meeting it; stale jobs are ignored) and
  its initial executors fit;
- ``fits`` (the baselines): a queued job is admitted when its initial executors fit;
- ``priority`` (``henge``): like ``slos-met``, but only a job of at least the queued job's
  priority that misses its SLO by at least the policy's ``tolerance`` (``henge`` and the
  policies built on it: their ``min_gain``) of its priority, or is warming up, holds it back;
  and a job whose initial
  executors do not fit is still admitted, with those that fit (at least its minimum, which may
  wait pending), when lower-priority jobs hold enough cores above their minimums to make the
  rest (the policy then moves them: priority preemption), or when its minimum fits in the
  free room once every other job has been considered (the policy then grows it like any job
  missing its SLO).

"Fit" means each initial executor finds room (cores and memory) on one ready node. Queued jobs
are considered first registered first; one that does not fit does not block smaller ones behind
it (first fit). A policy names its rule with an ``admission_rule`` attribute; a policy without
one gets ``fits``. Its ``admission_tolerance`` attribute, if any, is the tolerance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scheduler.core.cluster import place_executors, room_for
from scheduler.core.model import Admission, Change, ClusterView, JobStatus, JobView
from scheduler.core.slo import meets_slo


class AdmissionRule(StrEnum):
    SLOS_MET = "slos-met"
    FITS = "fits"
    PRIORITY = "priority"


@dataclass(frozen=True)
class AdmissionResult:
    admissions: tuple[Admission, ...]
    """One entry per queued job: admitted, or still queued with the reason."""
    changes: tuple[Change, ...]
    """``0 → initial`` for every admitted job (under ``priority``, 0 to what it is admitted
    with)."""
    cluster: ClusterView
    """The cluster with the admitted jobs' executors placed."""


def initial_executors(job: JobView) -> int:
    """The executors ``job`` starts with, inside its [min, max]."""
    wanted = job.initial_executors if job.initial_executors is not None else job.executors
    return max(job.min_executors, min(job.max_executors, wanted))


def _blocker(job: JobView, blockers: Sequence[JobView], rule: AdmissionRule) -> JobView | None:
    if rule is AdmissionRule.PRIORITY:
        return next((b for b in blockers if b.priority >= job.priority), None)
    return blockers[0] if blockers else None


def _holds_back(job: JobView, slack: float) -> bool:
    """Whether running ``job`` misses its SLO by at least ``slack`` of its priority."""
    return not meets_slo(job.utility, job.priority) and job.utility <= (1 - slack) * job.priority


def _preemptible(job: JobView, running: Sequence[JobView], cluster: ClusterView) -> bool:
    """Whether the free cores and the cores lower-priority jobs hold above their minimums
    could hold ``job``'s initial executors."""
    spare = sum(
        (r.executors - r.min_executors) * r.cores_per_executor
        for r in running
        if r.priority < job.priority and r.executors > r.min_executors
    )
    return cluster.free_cores + spare >= initial_executors(job) * job.cores_per_executor


def admit(
    queued: Sequence[JobView],
    running: Sequence[JobView],
    warming: Sequence[JobView],
    cluster: ClusterView,
    rule: AdmissionRule,
    tolerance: float = 0.0,
) -> AdmissionResult:
    """Decide the queued jobs' admission against ``running`` (the counted jobs) and ``cluster``.
    Under ``priority``, a running job that misses its SLO by less than ``tolerance`` of its
    priority holds no job back (the policy moves for no smaller gain), and jobs admitted
    with only what fits in the free room come last, so that one does not take the room of a
    smaller job behind it that fits whole."""
    order = sorted(queued, key=lambda j: (j.registered_at, j.job_id))
    slack = tolerance if rule is AdmissionRule.PRIORITY else 0.0
    blockers = (
        [j for j in running if _holds_back(j, slack)] + list(warming)
        if rule is not AdmissionRule.FITS
        else []
    )
    decided: dict[str, Admission] = {}
    changes: list[Change] = []
    short: list[JobView] = []
    for job in order:
        blocker = _blocker(job, blockers, rule)
        if blocker is not None:
            why = (
                f"waiting: running job {blocker.name} has not reported yet"
                if blocker.metrics is None
                else f"waiting: running job {blocker.name} misses its SLO"
            )
            decided[job.job_id] = Admission(job.job_id, JobStatus.QUEUED, why)
            continue
        count = initial_executors(job)
        placed = place_executors(cluster, count, job.cores_per_executor, job.memory_mb)
        if (
            placed is None
            and rule is AdmissionRule.PRIORITY
            and _preemptible(job, running, cluster)
        ):
            count, placed = _what_fits(
                job, cluster, room_for(cluster, job.cores_per_executor, job.memory_mb)
            )
        if placed is None:
            short.append(job)
            continue
        cluster = placed
        decided[job.job_id] = _admitted(job, count)
        changes.append(Change(job.job_id, 0, count, "admitted"))
    for job in short:
        # Its minimum (and one executor at least) in the free room: admitted with what fits,
        # it disturbs no running job, and the policy grows it like any other. Held back for the
        # rest of its initial executors, a job among others of its priority that held every
        # core waited for hours (`examples/scenarios/same-priority-crowd.yaml`, seed 3).
        count, placed = initial_executors(job), None
        fitting = room_for(cluster, job.cores_per_executor, job.memory_mb)
        if rule is AdmissionRule.PRIORITY and fitting >= max(1, job.min_executors):
            count, placed = _what_fits(job, cluster, fitting)
        if placed is None:
            why = (
                f"waiting: {count} executor(s) of {job.cores_per_executor} core(s) and "
                f"{job.memory_mb} MiB do not fit (free cores {cluster.free_cores:g})"
            )
            decided[job.job_id] = Admission(job.job_id, JobStatus.QUEUED, why)
            continue
        cluster = placed
        decided[job.job_id] = _admitted(job, count)
        changes.append(Change(job.job_id, 0, count, "admitted"))
    admissions = tuple(decided[j.job_id] for j in order)
    return AdmissionResult(admissions, tuple(changes), cluster)


def _what_fits(job: JobView, cluster: ClusterView, fitting: int) -> tuple[int, ClusterView | None]:
    """``job`` admitted with its minimum at least (those that find no room wait pending for
    the executors the policy moves to it) and the rest of its initial executors as far as
    they fit (``fitting``): the count, and the cluster with those placed."""
    count = max(job.min_executors, min(initial_executors(job), fitting))
    placed = place_executors(cluster, min(count, fitting), job.cores_per_executor, job.memory_mb)
    return count, placed


def _admitted(job: JobView, count: int) -> Admission:
    return Admission(job.job_id, JobStatus.ADMITTED, f"admitted with {count} executor(s)")
