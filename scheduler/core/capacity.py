"""Operator capacity and congestion (DESIGN §2, thesis §2.5.2, eq. 2.3 adapted to Spark).

Capacity is the fraction of the window the job's executor cores spent running tasks:
``busy_core_ms / (window_ms * total_cores)``. A job is congested when its capacity is above the
threshold (0.3 in the paper).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

CAPACITY_THRESHOLD = 0.3


def capacity(busy_core_ms: float, window_ms: float, total_cores: float) -> float | None:
    """Eq. 2.3 adapted: busy core time over available core time; ``None`` when the job held no
    cores or the window is empty. Not clamped: measurement skew may push it slightly above 1."""
    if not all(math.isfinite(v) for v in (busy_core_ms, window_ms, total_cores)):
        return None
    if window_ms <= 0 or total_cores <= 0:
        return None
    return max(0.0, busy_core_ms) / (window_ms * total_cores)


def job_capacity(stage_capacities: Iterable[float | None]) -> float | None:
    """With per-stage capacities, the job's capacity is the most congested stage's."""
    known = [c for c in stage_capacities if c is not None]
    return max(known) if known else None


def is_congested(capacity: float | None, threshold: float = CAPACITY_THRESHOLD) -> bool:
    """Congested when ``capacity`` > ``threshold``; an unknown capacity is not congested."""
    return capacity is not None and capacity > threshold
