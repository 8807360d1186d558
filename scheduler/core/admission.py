"""Admission of newly registered jobs (DESIGN §3 step 8, thesis §2.6.4).

Two rules:

- ``slos-met`` (Henge): a queued job is admitted when every running job meets its SLO (jobs
  still warming up, without metrics, count as not yet meeting it; stale jobs are ignored) and
  its initial executors fit;
- ``fits`` (the baselines): a queued job is admitted when its initial executors fit.

"Fit" means each initial executor finds room (cores and memory) on one ready node. Queued jobs
are considered first registered first; one that does not fit does not block smaller ones behind
it (first fit). A policy names its rule with an ``admission_rule`` attribute; a policy without
one gets ``fits``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scheduler.core.cluster import place_executors
from scheduler.core.model import Admission, Change, ClusterView, JobStatus, JobView
from scheduler.core.slo import meets_slo


class AdmissionRule(StrEnum):
    SLOS_MET = "slos-met"
    FITS = "fits"


@dataclass(frozen=True)
class AdmissionResult:
    admissions: tuple[Admission, ...]
    """One entry per queued job: admitted, or still queued with the reason."""
    changes: tuple[Change, ...]
    """``0 → initial`` for every admitted job."""
    cluster: ClusterView
    """The cluster with the admitted jobs' executors placed."""


def initial_executors(job: JobView) -> int:
    """The executors ``job`` starts with, inside its [min, max]."""
    wanted = job.initial_executors if job.initial_executors is not None else job.executors
    return max(job.min_executors, min(job.max_executors, wanted))


def blocking_job(running: Sequence[JobView], warming: Sequence[JobView]) -> JobView | None:
    """The first running job that keeps the ``slos-met`` rule from admitting, if any."""
    for job in running:
        if not meets_slo(job.utility, job.priority):
            return job
    return warming[0] if warming else None


def admit(
    queued: Sequence[JobView],
    running: Sequence[JobView],
    warming: Sequence[JobView],
    cluster: ClusterView,
    rule: AdmissionRule,
) -> AdmissionResult:
    """Decide the queued jobs' admission against ``running`` (the counted jobs) and ``cluster``."""
    order = sorted(queued, key=lambda j: (j.registered_at, j.job_id))
    blocker = blocking_job(running, warming) if rule is AdmissionRule.SLOS_MET else None
    admissions: list[Admission] = []
    changes: list[Change] = []
    for job in order:
        if blocker is not None:
            why = (
                f"waiting: running job {blocker.name} has not reported yet"
                if blocker.metrics is None
                else f"waiting: running job {blocker.name} misses its SLO"
            )
            admissions.append(Admission(job.job_id, JobStatus.QUEUED, why))
            continue
        count = initial_executors(job)
        placed = place_executors(cluster, count, job.cores_per_executor, job.memory_mb)
        if placed is None:
            why = (
                f"waiting: {count} executor(s) of {job.cores_per_executor} core(s) and "
                f"{job.memory_mb} MiB do not fit (free cores {cluster.free_cores:g})"
            )
            admissions.append(Admission(job.job_id, JobStatus.QUEUED, why))
            continue
        cluster = placed
        admissions.append(
            Admission(job.job_id, JobStatus.ADMITTED, f"admitted with {count} executor(s)")
        )
        changes.append(Change(job.job_id, 0, count, "admitted"))
    return AdmissionResult(tuple(admissions), tuple(changes), cluster)
