"""Service level objectives and the utility functions that score them (DESIGN §2, thesis §2.5.1).

A job's SLO has a juice objective, a latency objective, or both (hybrid: the average of the
two utilities). Every utility function is monotone, peaks at the job's priority exactly when the
objective's threshold is met, and is defined by a named shape.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class SLOError(ValueError):
    """An SLO definition that cannot be used; ``field`` names the offending key."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path
        self.message = message


class Shape(StrEnum):
    KNEE = "knee"
    LINEAR = "linear"
    STEP = "step"
    PIECEWISE = "piecewise"


class LatencyStat(StrEnum):
    MEAN = "mean"
    P95 = "p95"
    P99 = "p99"


Point = tuple[float, float]


@dataclass(frozen=True)
class UtilityShape:
    """How utility falls away from the threshold. Fractions are of the job's priority.

    - ``knee`` (default): eq. 2.1 for juice (linear from the origin), eq. 2.2 for latency
      (hyperbolic).
    - ``linear``: a straight ramp from fraction 0 at ``juice_zero_at`` / ``latency_zero_at_ms``
      up to 1 at the threshold (defaults: juice 0, latency twice the threshold).
    - ``step``: 1 when the threshold is met, else ``step_low`` (default 0).
    - ``piecewise``: linear interpolation through ``juice_points`` / ``latency_points``
      (pairs of metric value and fraction), flat beyond the end points; the curve must be
      monotone and reach 1 at the threshold.
    """

    kind: Shape = Shape.KNEE
    juice_zero_at: float = 0.0
    latency_zero_at_ms: float | None = None
    step_low: float = 0.0
    juice_points: tuple[Point, ...] = ()
    latency_points: tuple[Point, ...] = ()


@dataclass(frozen=True)
class SLO:
    """A job's objective: juice threshold in (0, 1], latency threshold in ms, or both."""

    juice: float | None = None
    latency_ms: float | None = None
    latency_stat: LatencyStat = LatencyStat.MEAN
    shape: UtilityShape = field(default_factory=UtilityShape)

    @property
    def has_juice(self) -> bool:
        return self.juice is not None

    @property
    def has_latency(self) -> bool:
        return self.latency_ms is not None


def validate_priority(priority: float) -> None:
    if not math.isfinite(priority) or priority <= 0:
        raise SLOError("priority", "must be a finite number > 0")


def validate_slo(slo: SLO) -> None:
    """Raise :class:`SLOError` naming the key when ``slo`` cannot define a utility function."""
    if slo.juice is None and slo.latency_ms is None:
        raise SLOError("slo", "needs a juice objective, a latency_ms objective, or both")
    if slo.juice is not None and not (math.isfinite(slo.juice) and 0 < slo.juice <= 1):
        raise SLOError("slo.juice", "must be in (0, 1]")
    if slo.latency_ms is not None and not (math.isfinite(slo.latency_ms) and slo.latency_ms > 0):
        raise SLOError("slo.latency_ms", "must be a finite number > 0")
    _validate_shape(slo)


def _validate_shape(slo: SLO) -> None:
    shape = slo.shape
    if not 0 <= shape.step_low < 1:
        raise SLOError("slo.utility.step_low", "must be in [0, 1)")
    if slo.juice is not None and not 0 <= shape.juice_zero_at < slo.juice:
        raise SLOError("slo.utility.juice_zero_at", "must be in [0, juice threshold)")
    if (
        slo.latency_ms is not None
        and shape.latency_zero_at_ms is not None
        and not shape.latency_zero_at_ms > slo.latency_ms
    ):
        raise SLOError("slo.utility.latency_zero_at_ms", "must be above the latency threshold")
    if shape.kind is not Shape.PIECEWISE:
        if shape.juice_points or shape.latency_points:
            raise SLOError("slo.utility", "points are only used by the piecewise shape")
        return
    if slo.juice is not None:
        _validate_points("slo.utility.juice_points", shape.juice_points, slo.juice, rising=True)
    elif shape.juice_points:
        raise SLOError("slo.utility.juice_points", "given but the SLO has no juice objective")
    if slo.latency_ms is not None:
        _validate_points(
            "slo.utility.latency_points", shape.latency_points, slo.latency_ms, rising=False
        )
    elif shape.latency_points:
        raise SLOError("slo.utility.latency_points", "given but the SLO has no latency objective")


def _validate_points(key: str, points: Sequence[Point], threshold: float, rising: bool) -> None:
    if len(points) < 2:
        raise SLOError(key, "the piecewise shape needs at least two points")
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    if not all(math.isfinite(v) for v in xs + ys):
        raise SLOError(key, "points must be finite numbers")
    if any(b <= a for a, b in itertools.pairwise(xs)):
        raise SLOError(key, "point x values must be strictly increasing")
    if any(not 0 <= y <= 1 for y in ys):
        raise SLOError(key, "point utilities are fractions of the priority, in [0, 1]")
    steps = list(itertools.pairwise(ys))
    if rising and any(b < a for a, b in steps):
        raise SLOError(key, "utility must not fall as juice rises (non-monotone)")
    if not rising and any(b > a for a, b in steps):
        raise SLOError(key, "utility must not rise as latency rises (non-monotone)")
    if not math.isclose(interpolate(points, threshold), 1.0):
        raise SLOError(key, "the curve must reach utility 1 at the SLO threshold")


def interpolate(points: Sequence[Point], x: float) -> float:
    """Piecewise-linear value at ``x``; flat before the first and after the last point."""
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def juice_fraction(slo: SLO, juice: float) -> float:
    """Fraction of the priority earned by ``juice`` (clamped to [0, 1] first)."""
    assert slo.juice is not None
    threshold = slo.juice
    # (conditionals rather than min/max: this runs for every point of every job's curve)
    value = 0.0 if juice < 0.0 else 1.0 if juice > 1.0 else juice
    shape = slo.shape
    if shape.kind is Shape.KNEE:
        knee = value / threshold
        return knee if knee < 1.0 else 1.0
    if shape.kind is Shape.STEP:
        return 1.0 if value >= threshold else shape.step_low
    if shape.kind is Shape.LINEAR:
        low = shape.juice_zero_at
        return min(1.0, max(0.0, (value - low) / (threshold - low)))
    return interpolate(shape.juice_points, value)


def latency_fraction(slo: SLO, latency_ms: float) -> float:
    """Fraction of the priority earned at ``latency_ms`` (infinite latency earns the least)."""
    assert slo.latency_ms is not None
    threshold = slo.latency_ms
    shape = slo.shape
    if math.isnan(latency_ms):
        latency_ms = math.inf
    if shape.kind is Shape.KNEE:
        return 1.0 if latency_ms <= threshold else threshold / latency_ms
    if shape.kind is Shape.STEP:
        return 1.0 if latency_ms <= threshold else shape.step_low
    if shape.kind is Shape.LINEAR:
        zero_at = shape.latency_zero_at_ms or 2 * threshold
        if latency_ms <= threshold:
            return 1.0
        return max(0.0, (zero_at - latency_ms) / (zero_at - threshold))
    return interpolate(shape.latency_points, latency_ms)


def utility(slo: SLO, priority: float, juice: float | None, latency_ms: float | None) -> float:
    """The job's utility in [0, priority]. A missing metric for an objective earns nothing for it.

    Hybrid SLOs average the two fractions (§2.9.2). Rounding keeps a met SLO at exactly
    ``priority`` so that "meets its SLO" can be an equality test.
    """
    # (Called for every count of every job's curve each round: no list, no generic sum.)
    of_juice = of_latency = None
    if slo.juice is not None:
        of_juice = juice_fraction(slo, juice) if juice is not None else 0.0
    if slo.latency_ms is not None:
        of_latency = latency_fraction(slo, latency_ms) if latency_ms is not None else 0.0
    if of_juice is None:
        if of_latency is None:
            raise ValueError("an SLO needs a juice or a latency objective")
        fraction = of_latency
    else:
        fraction = of_juice if of_latency is None else (of_juice + of_latency) / 2
    return priority * (fraction if 0.0 < fraction < 1.0 else 1.0 if fraction >= 1.0 else 0.0)


def meets_slo(utility_value: float, priority: float) -> bool:
    """A job meets its SLO when its utility equals its priority (within float noise)."""
    return utility_value >= priority * (1 - 1e-9)


def slo_from_mapping(data: Mapping[str, Any]) -> SLO:
    """Build an SLO from its stored/API form (``{"juice":…, "latency_ms":…, "utility":{…}}``)."""
    shape_data: Mapping[str, Any] = data.get("utility") or {}
    shape = UtilityShape(
        kind=Shape(shape_data.get("shape", "knee")),
        juice_zero_at=float(shape_data.get("juice_zero_at", 0.0)),
        latency_zero_at_ms=_opt_float(shape_data.get("latency_zero_at_ms")),
        step_low=float(shape_data.get("step_low", 0.0)),
        juice_points=_points(shape_data.get("juice_points")),
        latency_points=_points(shape_data.get("latency_points")),
    )
    return SLO(
        juice=_opt_float(data.get("juice")),
        latency_ms=_opt_float(data.get("latency_ms")),
        latency_stat=LatencyStat(data.get("latency_stat", "mean")),
        shape=shape,
    )


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _points(value: Any) -> tuple[Point, ...]:
    if not value:
        return ()
    return tuple((float(x), float(y)) for x, y in value)
