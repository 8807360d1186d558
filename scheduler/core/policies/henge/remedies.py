"""What ``henge`` does with a diagnosis (``diagnose``; :mod:`scheduler.core.diagnosis`).

Only a job missing its SLO is diagnosed, as Dhalion diagnoses only an unhealthy topology: a
fast job with one slow executor or one heavy key loses nothing worth a change.

- A *slow executor* is replaced (:class:`~scheduler.core.model.Replacement`): its job keeps its
  count and gets a new executor for each slow one. Only as many are replaced as the nodes other
  than the slow executors' have room for (higher priorities first; the cluster manager would
  put the others back where they were); the rest wait for room. The job's growth waits
  ``quiesce_s`` for the new executors to come up and be measured. When new executors come up
  slow on a node the last replacement left, within ``blacklist_ttl_s``, the node is at fault:
  the job is not replaced again for ``blacklist_ttl_s`` (as a failed growth is blacklisted) and
  is sized as before.
- A *skewed* stage holds the job's growth, while the skew lasts, at the most cores its task
  figures say still shorten its batches by ``min_gain`` (more cannot shorten the skewed
  stage; the others may still gain).
- *Under-provisioned*: growth as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.core.bounds import upper_bound
from scheduler.core.cluster import node_room
from scheduler.core.diagnosis import (
    Diagnosis,
    DiagnosisSettings,
    ExecutorLook,
    Finding,
    StageLook,
    diagnose,
    latest_look,
)
from scheduler.core.model import ClusterView, JobView, Replacement
from scheduler.core.policies.henge.product_settings import ProductSettings
from scheduler.core.policies.henge.product_state import Replaced
from scheduler.core.slo import meets_slo


def diagnosis_settings(settings: ProductSettings) -> DiagnosisSettings:
    return DiagnosisSettings(
        slow_factor=settings.slow_executor_factor,
        skew_factor=settings.skew_factor,
        windows=settings.diagnosis_windows,
        enough_gain=settings.min_gain,
    )


def diagnose_job(job: JobView, wanted: DiagnosisSettings) -> Diagnosis | None:
    """``job``'s diagnosis from its task figures (``None`` without any)."""
    m = job.metrics
    if m is None or not m.task_windows:
        return None
    cores = job.cores_per_executor
    running = m.executors_reported if m.executors_reported is not None else job.executors
    return diagnose(m.task_windows, running * cores, upper_bound(job) * cores, wanted)


def diagnoses(jobs: Sequence[JobView], settings: ProductSettings) -> dict[str, Diagnosis]:
    """The diagnosis of each job that misses its SLO and reports task figures."""
    wanted = diagnosis_settings(settings)
    out: dict[str, Diagnosis] = {}
    for job in jobs:
        if meets_slo(job.utility, job.priority):
            continue
        found = diagnose_job(job, wanted)
        if found is not None:
            out[job.job_id] = found
    return out


@dataclass(frozen=True)
class JobDiagnosis:
    """A job's diagnosis as people read it (API, CLI, dashboard)."""

    job_id: str
    diagnosis: Diagnosis | None
    """``None``: its reports carry no task figures."""
    acted_on: bool
    """Whether the scheduler acts on it now."""
    note: str
    """What the scheduler does with it, in a sentence."""
    windows: int
    """Report windows with task figures in the job's current window."""
    executors: tuple[ExecutorLook, ...] = ()
    stages: tuple[StageLook, ...] = ()


def job_diagnosis(
    job: JobView, settings: ProductSettings | None, policy: str, can_replace: bool = True
) -> JobDiagnosis:
    """``job``'s diagnosis by ``settings`` (``henge``'s; ``None`` when the scheduler runs
    ``policy``, another one), with its latest figures and what is done about it (``can_replace``:
    whether the scheduler's realizer can replace executors)."""
    wanted = diagnosis_settings(settings) if settings is not None else DiagnosisSettings()
    found = diagnose_job(job, wanted)
    m = job.metrics
    if found is None or m is None:
        note = "its reports carry no task figures (none yet, or an agent that does not send them)"
        return JobDiagnosis(job.job_id, None, False, note, 0)
    running = m.executors_reported if m.executors_reported is not None else job.executors
    executors, stages = latest_look(m.task_windows, running * job.cores_per_executor)
    acted = settings is not None and settings.diagnose and not meets_slo(job.utility, job.priority)
    note = (
        _what_is_done(job, found, settings, policy)
        if not acted
        else _remedy(job, found, can_replace)
    )
    return JobDiagnosis(job.job_id, found, acted, note, len(m.task_windows), executors, stages)


def _what_is_done(
    job: JobView, found: Diagnosis, settings: ProductSettings | None, policy: str
) -> str:
    if settings is None:
        return f"the scheduler runs {policy!r}, which does not act on diagnoses"
    if not settings.diagnose:
        return "henge's diagnose setting is off: a job missing its SLO is grown"
    return "the job meets its SLO: nothing is done about it"


def _remedy(job: JobView, found: Diagnosis, can_replace: bool) -> str:
    if found.finding is Finding.SLOW_EXECUTOR and not can_replace:
        return "the scheduler's realizer cannot replace executors: it is sized as before"
    if found.finding is Finding.SLOW_EXECUTOR:
        return "its slow executors are replaced (as room on other nodes allows), not added to"
    if found.finding is Finding.UNDECIDED:
        return "it is not grown until the next windows confirm or clear the finding"
    if found.finding is Finding.UNDER_PROVISIONED:
        return "it is grown as its model says"
    cores = found.useful_cores
    if cores is None or cores <= (job.executors * job.cores_per_executor):
        return "more executors will not help: it is not grown while the skew lasts"
    most = executors_for(cores, job.cores_per_executor)
    return (
        f"more executors shorten only its other stages: it is grown to {most} executors at "
        "most while the skew lasts"
    )


@dataclass
class Remedies:
    """This round's replacements, and what the state keeps of them."""

    replacements: list[Replacement] = field(default_factory=list)
    replaced: dict[str, Replaced] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def replace_slow(
    jobs: Sequence[JobView],
    found: Mapping[str, Diagnosis],
    replaced: Mapping[str, Replaced],
    cluster: ClusterView,
    now_s: float,
    settings: ProductSettings,
) -> Remedies:
    """A replacement for each job diagnosed with slow executors, unless its last one is too
    recent to judge or failed (see the module docstring)."""
    ttl = settings.blacklist_ttl_s
    out = Remedies(replaced={k: r for k, r in replaced.items() if now_s - r.at < ttl})
    slow_hosts = {h for d in found.values() for h in d.hosts}
    room = [list(node_room(n)) for n in cluster.nodes if n.ready and n.name not in slow_hosts]
    for job in sorted(jobs, key=lambda j: -j.priority):
        d = found.get(job.job_id)
        if d is None or d.finding is not Finding.SLOW_EXECUTOR:
            continue
        last = out.replaced.get(job.job_id)
        if last is not None and (_waiting(last, now_s, settings) or _blocked(last, now_s)):
            continue
        # New executors (not found slow last time) slow on a node the last replacement left:
        # the node, not the executors, is slow.
        new = last is not None and bool(set(d.executors) - set(last.executors))
        again = sorted(set(d.hosts) & set(last.hosts)) if last is not None and new else []
        if last is not None and again:
            out.replaced[job.job_id] = last._replace(blocked_until=now_s + ttl)
            out.notes.append(
                f"{job.name}: new executors came up slow on {', '.join(again)} again; the node "
                f"is slow, not its executors: not replaced again for {ttl:.0f} s"
            )
            continue
        placed = _place(room, job.cores_per_executor, job.memory_mb, len(d.executors))
        if placed == 0:
            out.notes.append(f"{job.name}: its slow executors wait for room on another node")
            continue
        ids = d.executors[:placed]
        why = d.reason if placed == len(d.executors) else f"{d.reason}; room for {placed} elsewhere"
        out.replacements.append(Replacement(job.job_id, ids, why))
        out.replaced[job.job_id] = Replaced(now_s, d.hosts, d.executors)
    return out


def _place(room: list[list[float]], cores: float, memory_mb: float, count: int) -> int:
    """How many of ``count`` executors fit in ``room`` ([free cores, free memory] per node,
    taken first fit); the room they take is taken out."""
    placed = 0
    for node in room:
        while placed < count and node[0] >= cores - 1e-9 and node[1] >= memory_mb - 1e-9:
            node[0] -= cores
            node[1] -= memory_mb
            placed += 1
    return placed


def growth_cap(
    job: JobView,
    found: Mapping[str, Diagnosis],
    replaced: Mapping[str, Replaced],
    now_s: float,
    settings: ProductSettings,
    can_replace: bool = True,
) -> tuple[int, str] | None:
    """The most executors ``job`` may grow to this round and why, when a diagnosis says more
    would not help it; ``None``: no limit. Where executors cannot be replaced, a job with slow
    ones is sized as before (held, it would wait for a replacement that never comes)."""
    held = job.executors
    last = replaced.get(job.job_id)
    if last is not None and _waiting(last, now_s, settings):
        return held, f"{job.name}: not grown while its replaced executors come up"
    d = found.get(job.job_id)
    if d is None or d.finding is Finding.UNDER_PROVISIONED:
        return None
    if d.finding is Finding.SLOW_EXECUTOR:
        if not can_replace or (last is not None and _blocked(last, now_s)):
            return None  # (replacing did not help, or cannot be done: sized as before)
        return held, f"{job.name}: not grown, {d.reason}"
    if d.finding is Finding.UNDECIDED:
        return held, f"{job.name}: not grown yet, {d.reason}"
    if d.useful_cores is not None:
        cap = max(held, executors_for(d.useful_cores, job.cores_per_executor))
        if cap > held:
            return cap, f"{job.name}: grown to {cap} at most, {d.reason}"
    return held, f"{job.name}: not grown, {d.reason}"


def skew_seen(
    jobs: Sequence[JobView],
    found: Mapping[str, Diagnosis],
    seen: Mapping[str, float],
    now_s: float,
    keep_s: float,
) -> dict[str, float]:
    """When each present job was last found skewed, for ``keep_s`` after."""
    out: dict[str, float] = {}
    for job in jobs:
        d = found.get(job.job_id)
        if d is not None and d.finding is Finding.SKEW:
            out[job.job_id] = now_s
        elif job.job_id in seen and now_s - seen[job.job_id] < keep_s:
            out[job.job_id] = seen[job.job_id]
    return out


def executors_for(cores: int, cores_per_executor: int) -> int:
    """The executors that hold ``cores``."""
    return math.ceil(cores / cores_per_executor - 1e-9)


def _waiting(last: Replaced, now_s: float, settings: ProductSettings) -> bool:
    return last.blocked_until is None and now_s - last.at < settings.quiesce_s


def _blocked(last: Replaced, now_s: float) -> bool:
    return last.blocked_until is not None and now_s < last.blocked_until


def hosts_slow_for_several(found: Mapping[str, Diagnosis], jobs: int = 2) -> list[str]:
    """Nodes on which slow executors of at least ``jobs`` jobs run: the node, not the
    executors, is at fault."""
    count: dict[str, int] = {}
    for d in found.values():
        for host in d.hosts:
            count[host] = count.get(host, 0) + 1
    return sorted(h for h, n in count.items() if n >= jobs)
