"""Input rates of simulated jobs: constant, steps, or a per-minute trace, times input spikes.

A job's input is a piecewise-constant rate (rows per second) over simulated time, kept with its
running integral so that the rows arrived up to any time cost one binary search.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import scheduler
from scheduler.sim.scenario import InputSpec, Spike, TraceSpec

PACKAGE_TRACES = Path(__file__).parent / "traces"
SHARED_TRACES = Path(scheduler.__file__).resolve().parents[2] / "shared" / "traces"


def find_trace(name: str, base_dir: Path) -> Path | None:
    """A trace file by name: absolute, else relative to the scenario's folder, else in the
    package's ``traces/``, else in the project's ``../shared/traces/``."""
    path = Path(name)
    if path.is_absolute():
        return path if path.is_file() else None
    for folder in (base_dir, PACKAGE_TRACES, SHARED_TRACES):
        candidate = folder / path
        if candidate.is_file():
            return candidate
    return None


@functools.lru_cache(maxsize=16)
def load_trace(path: Path) -> tuple[float, ...]:
    """Events per minute of a ``minute,events`` CSV (``#`` comments and a header allowed), from
    its first minute on; minutes must be consecutive."""
    minutes: list[int] = []
    events: list[float] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#") or text[0].isalpha():
            continue
        parts = text.split(",")
        try:
            minute, count = int(parts[0]), float(parts[1])
        except (IndexError, ValueError) as exc:
            raise ValueError(f"{path.name} line {number}: expected 'minute,events'") from exc
        if minutes and minute != minutes[-1] + 1:
            raise ValueError(f"{path.name} line {number}: minutes must be consecutive")
        if not math.isfinite(count) or count < 0:
            raise ValueError(f"{path.name} line {number}: events must be a number >= 0")
        minutes.append(minute)
        events.append(count)
    if not events:
        raise ValueError(f"{path.name}: no data rows")
    return tuple(events)


@dataclass(frozen=True)
class RateSchedule:
    """Rows per second, constant on ``[starts[i], starts[i+1])``; the last rate holds forever."""

    starts: tuple[float, ...]
    rates: tuple[float, ...]
    cumulative_at: tuple[float, ...]
    """Rows arrived from 0 to ``starts[i]``."""

    @staticmethod
    def of(starts: Sequence[float], rates: Sequence[float]) -> RateSchedule:
        cum = [0.0]
        for (t0, t1), rate in zip(itertools.pairwise(starts), rates, strict=False):
            cum.append(cum[-1] + rate * (t1 - t0))
        return RateSchedule(tuple(starts), tuple(rates), tuple(cum))

    def rate(self, t: float) -> float:
        return self.rates[bisect.bisect_right(self.starts, t) - 1] if t >= 0 else 0.0

    def arrived(self, t: float) -> float:
        """Rows arrived from time 0 to ``t``."""
        if t <= 0:
            return 0.0
        i = bisect.bisect_right(self.starts, t) - 1
        return self.cumulative_at[i] + self.rates[i] * (t - self.starts[i])

    def segment(self, t: float) -> tuple[float, float, float, float]:
        """(start, end, rate, rows arrived by start) of the segment holding ``t`` >= 0."""
        i = bisect.bisect_right(self.starts, t) - 1
        end = self.starts[i + 1] if i + 1 < len(self.starts) else math.inf
        return self.starts[i], end, self.rates[i], self.cumulative_at[i]

    def time_of(self, rows: float) -> float:
        """The earliest time by which ``rows`` rows have arrived (inverse of :meth:`arrived`)."""
        if rows <= 0:
            return 0.0
        i = bisect.bisect_left(self.cumulative_at, rows) - 1
        rate = self.rates[i]
        if rate <= 0:  # only possible in the last segment
            return math.inf
        return self.starts[i] + (rows - self.cumulative_at[i]) / rate


def base_segments(spec: InputSpec, horizon_s: float) -> tuple[list[float], list[float]]:
    """(starts, rates) of the input before spikes, covering ``[0, horizon_s]``."""
    if spec.constant is not None:
        return [0.0], [spec.constant]
    if spec.steps:
        return [t for t, _ in spec.steps], [r for _, r in spec.steps]
    assert spec.trace is not None
    return trace_segments(spec.trace, horizon_s)


def trace_segments(trace: TraceSpec, horizon_s: float) -> tuple[list[float], list[float]]:
    """One segment per trace minute (``compression`` simulated seconds long); the trace wraps
    around at its end. A minute's rate is ``events * scale / 60`` rows per second."""
    events = load_trace(trace.file)
    count = max(1, math.ceil(horizon_s / trace.compression) + 1)
    starts = [i * trace.compression for i in range(count)]
    per_event = trace.scale / 60.0
    rates = [events[(trace.start_minute + i) % len(events)] * per_event for i in range(count)]
    return starts, rates


def schedule_for(
    spec: InputSpec, job: str, spikes: Iterable[Spike], horizon_s: float
) -> RateSchedule:
    """The job's input with the spikes that name it (or name no job) multiplied in."""
    starts, rates = base_segments(spec, horizon_s)
    mine = [s for s in spikes if not s.jobs or job in s.jobs]
    if not mine:
        return RateSchedule.of(starts, rates)
    cuts = sorted({*starts, *(s.at_s for s in mine), *(s.at_s + s.duration_s for s in mine)})
    base = RateSchedule.of(starts, rates)
    new_rates = []
    for t in cuts:
        factor = math.prod(s.factor for s in mine if s.at_s <= t < s.at_s + s.duration_s)
        new_rates.append(base.rate(t) * factor)
    return RateSchedule.of(cuts, new_rates)
