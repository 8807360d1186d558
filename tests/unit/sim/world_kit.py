"""Small scenarios for the simulator's tests, built as documents (no files)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from scheduler.core.model import JobMetrics
from scheduler.core.report import Report, report_from_document
from scheduler.core.slo import slo_from_mapping
from scheduler.core.window import window_metrics
from scheduler.sim.scenario import Scenario
from scheduler.sim.scenario_file import parse_scenario
from scheduler.sim.scenario_keys import deep_merge
from scheduler.sim.world import SimWorld

BASE: dict[str, Any] = {
    "name": "t",
    "duration_s": 3600,
    "cluster": {"nodes": 2, "cores": 8, "memory_mb": 65536, "executor_start_delay_s": 5},
    "jobs": [
        {
            "name": "a",
            "priority": 10,
            "slo": {"latency_ms": 1500},
            "shape": "linear",
            "cost_ms_per_row": 1.0,
            "partitions": 16,
            "noise": 0.0,
            "executors": {"initial": 4, "min": 1, "max": 16},
            "input": {"constant": 2000},
        }
    ],
}


def document(**changes: Any) -> dict[str, Any]:
    """The base scenario document with ``changes`` merged in; ``job`` merges into jobs[0]."""
    doc = copy.deepcopy(BASE)
    job = changes.pop("job", None)
    if job is not None:
        doc["jobs"][0] = deep_merge(doc["jobs"][0], job)
        if "input" in job:  # an input is one kind or another: replace, don't merge
            doc["jobs"][0]["input"] = job["input"]
    return deep_merge(doc, changes)


def scenario(**changes: Any) -> Scenario:
    return parse_scenario(document(**changes))


def world(scn: Scenario, seed: int = 1, targets: Mapping[str, int] | None = None) -> SimWorld:
    w = SimWorld(scn, seed)
    for job in scn.jobs:
        w.set_target(job.name, (targets or {}).get(job.name, job.executors.initial))
    return w


def run(w: SimWorld, until_s: float) -> list[tuple[str, Mapping[str, Any]]]:
    """Advance ``w`` sub-window by sub-window up to ``until_s``; every report in order."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    step = w.scenario.sub_window_s
    t = w._window * step
    while t + step <= until_s + 1e-9:
        t += step
        out.extend(w.advance(w.start + timedelta(seconds=t)))
    return out


def reports_of(out: Sequence[tuple[str, Mapping[str, Any]]], job: str) -> list[Report]:
    return [report_from_document(doc) for name, doc in out if name == job]


def metrics_at(w: SimWorld, reports: Sequence[Report], job: str, t_s: float) -> JobMetrics:
    spec = w.scenario.job(job)
    now = w.start + timedelta(seconds=t_s)
    m = window_metrics(reports, slo_from_mapping(spec.slo), spec.priority, now)
    assert m is not None
    return m
