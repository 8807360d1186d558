"""``henge bench forecast``: which forecaster of a job's input rate, by size, speed and accuracy.

Every candidate forecasts the next 60 minutes of a per-minute rate, a mean and a 0.9 upper
quantile, from five weeks (50,400 minutes) of history, at rolling origins over the last two
weeks of each series. Measured per candidate:

* install size: the files (``importlib.metadata``) of its distribution and of every
  distribution it pulls in that the base ``henge`` install does not already have;
* fit time: the median time of one fit and forecast on five weeks of history, in CPU seconds
  (this process and its children: the time it costs on a machine shared with other work) and
  in wall seconds;
* MASE at 5, 15 and 60 minutes: the mean absolute error over leads 1..h from every origin,
  divided by that of seasonal-naive (the same minute one week earlier) on the same minutes;
* coverage: the share of actual minutes (leads 1..60) at or below the upper bound.

The library candidates fit their seasonal parts on 15-minute means (3,360 points instead of
50,400; on raw minutes MSTL with a weekly period takes minutes per series) and their forecast for
each 15-minute step is held for its 15 minutes. Their interval is for a 15-minute mean, so it is
widened, in quadrature, by the spread of minutes around their 15-minute mean over the last week
of history; without that no library's bound would cover minute rates. The libraries are imported
inside the functions that use them, so that this module imports without them.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import numpy.typing as npt

from scheduler import forecast
from scheduler.sim.inputs import SHARED_TRACES, load_trace

Floats = npt.NDArray[np.float64]
Forecaster = Callable[[Floats, int, float], tuple[Floats, Floats]]
"""(history, horizon, quantile) -> (mean, upper), one value per minute ahead."""

DAY = 1440
WEEK = 7 * DAY
HISTORY_MIN = 5 * WEEK
HORIZON_MIN = 60
QUANTILE = 0.9
LEADS = (5, 15, 60)
ORIGIN_STEP_MIN = 14 * 60
"""Origins 14 hours apart: 24 of them span the last two weeks and every time of day."""
BUCKET = 15
"""Minutes per point for the library candidates."""
DAILY_POINTS = DAY // BUCKET
WEEKLY_POINTS = WEEK // BUCKET
SERIES_NAMES = ("nasa-http", "diurnal", "bursty", "level-shift")
NASA_TRACE = SHARED_TRACES / "nasa-http-1995.csv"
GENERATED_DAYS = 49
"""Five weeks of history before the first origin plus the two weeks the origins span."""
SHIFT_DAYS = 3
"""The level-shift series drops this many days before its end."""
BREAK_DAYS = 9
"""The pattern-break and batches series change this many days before their end."""
OUTAGE_RUN_MIN, OUTAGE_MERGE_MIN, OUTAGE_SPAN_MIN = 7, 60, 20
EPOCH = "2024-01-01"
"""Prophet's time stamps start here; only the spacing matters to its seasonalities."""


@dataclass(frozen=True)
class Candidate:
    """A forecaster to compare: the distribution whose install it needs (None: nothing new)."""

    name: str
    distribution: str | None
    configuration: str
    forecast: Forecaster


@dataclass(frozen=True, eq=False)
class Scores:
    """One candidate on one series: per origin (rows) and lead (columns) the absolute errors of
    the candidate and of seasonal-naive, and whether the actual was at or below the upper bound
    (NaN where the actual, or last week's value, is missing)."""

    origins: tuple[int, ...]
    fit_s: tuple[float, ...]
    """Wall time of each fit."""
    fit_cpu_s: tuple[float, ...]
    """CPU time of each fit, this process's and its children's (Prophet runs CmdStan in one):
    on a shared machine the wall time also counts the others' work."""
    model_abs: Floats
    naive_abs: Floats
    covered: Floats

    def mase(self, lead: int) -> float:
        """Over leads 1..``lead`` of every origin; NaN if seasonal-naive made no error."""
        model, naive = self.model_abs[:, :lead], self.naive_abs[:, :lead]
        both = np.isfinite(model) & np.isfinite(naive)
        denominator = float(naive[both].sum())
        return float(model[both].sum()) / denominator if denominator > 0 else math.nan

    def coverage(self) -> float:
        return float(np.nanmean(self.covered)) if np.isfinite(self.covered).any() else math.nan

    def since(self, minute: int) -> Scores:
        """The origins at or after ``minute`` only."""
        keep = np.array(self.origins) >= minute
        return Scores(
            origins=tuple(o for o in self.origins if o >= minute),
            fit_s=tuple(f for f, k in zip(self.fit_s, keep, strict=True) if k),
            fit_cpu_s=tuple(f for f, k in zip(self.fit_cpu_s, keep, strict=True) if k),
            model_abs=self.model_abs[keep],
            naive_abs=self.naive_abs[keep],
            covered=self.covered[keep],
        )


# --- Series ---------------------------------------------------------------------------------


def load_nasa(path: Path = NASA_TRACE) -> Floats:
    """The NASA-HTTP trace, requests per minute, with its outages set to NaN (missing).

    Zeros are data (the trace has quiet minutes), but the server outage in early August is
    days of zeros followed by hours of flapping. Runs of 7+ zero minutes that lie within an
    hour of each other are merged, and a merged span of 20+ minutes is an outage; the trace's
    quiet minutes come in shorter runs.
    """
    x = np.asarray(load_trace(path), dtype=np.float64)
    for start, stop in _outages(x):
        x[start:stop] = np.nan
    return x


def _outages(x: Floats) -> list[tuple[int, int]]:
    """(start, stop) of each outage as :func:`load_nasa` defines it."""
    runs = [r for r in _zero_runs(x) if r[1] - r[0] >= OUTAGE_RUN_MIN]
    merged: list[tuple[int, int]] = []
    for start, stop in runs:
        if merged and start - merged[-1][1] < OUTAGE_MERGE_MIN:
            merged[-1] = (merged[-1][0], stop)
        else:
            merged.append((start, stop))
    return [(a, b) for a, b in merged if b - a >= OUTAGE_SPAN_MIN]


def _zero_runs(x: Floats) -> list[tuple[int, int]]:
    """(start, stop) of each run of consecutive zeros."""
    zero = np.concatenate(([0], (x == 0).astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(zero))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def generated(name: str, seed: int = 1) -> Floats:
    """Seven weeks of a generated per-minute input rate (rows/s), reproducible by ``seed``.

    ``diurnal``: a working-day shape (night low, midday peak, evening shoulder), weekends at
    55 %, a slowly wandering level (log AR(1), ~3 h memory, 8 %) and 12 % multiplicative
    minute noise. ``bursty``: the same with one minute in 150 at 3-8 times the rate.
    ``level-shift``: the same as ``diurnal`` until three days before the end, then at 40 %.
    ``pattern-break``: the same as ``diurnal`` until nine days before the end, then at 40 %
    with the daily peak eight hours later (the job moved to another region's traffic).
    ``batches``: the same as ``diurnal`` until nine days before the end, then fed in batches:
    300 rows/s for the first 12 minutes of every hour, 5 otherwise, with 5 % noise.
    """
    rng = np.random.default_rng(seed)
    n = GENERATED_DAYS * DAY
    t = np.arange(n)
    wander = _log_ar1(rng, n, memory_min=180.0, sd=0.08)
    factor = np.exp(wander + rng.normal(0.0, 0.12, n) - 0.12**2 / 2)
    rate = 100.0 * _weekly_shape(t) * factor
    if name == "bursty":
        burst = rng.random(n) < 1 / 150
        return np.where(burst, rate * rng.uniform(3.0, 8.0, n), rate)
    if name == "level-shift":
        return np.where(t >= n - SHIFT_DAYS * DAY, 0.4 * rate, rate)
    if name == "pattern-break":
        moved = 40.0 * _weekly_shape(t - 8 * 60) * factor
        return np.where(t >= n - BREAK_DAYS * DAY, moved, rate)
    if name == "batches":
        fed = np.where(t % 60 < 12, 300.0, 5.0) * np.exp(rng.normal(0.0, 0.05, n))
        return np.where(t >= n - BREAK_DAYS * DAY, fed, rate)
    if name != "diurnal":
        raise ValueError(f"unknown generated series {name!r}")
    return rate


def _weekly_shape(t: npt.NDArray[np.int64]) -> Floats:
    """The mean rate at minute ``t`` of the week (day 0 a Monday), around 1."""
    hours = (t % DAY) / 60.0
    day = 0.25 + 0.75 * np.exp(-0.5 * ((hours - 13.0) / 3.5) ** 2)
    evening = 0.25 * np.exp(-0.5 * ((hours - 20.5) / 1.5) ** 2)
    weekend = (t // DAY) % 7 >= 5
    return np.asarray((day + evening) * np.where(weekend, 0.55, 1.0), dtype=np.float64)


def _log_ar1(rng: np.random.Generator, n: int, memory_min: float, sd: float) -> Floats:
    """An AR(1) path with the given stationary sd and e-folding memory (minutes)."""
    phi = math.exp(-1.0 / memory_min)
    shocks = rng.normal(0.0, sd * math.sqrt(1 - phi**2), n)
    path = np.empty(n)
    level = 0.0
    for i in range(n):
        level = phi * level + shocks[i]
        path[i] = level
    return path


def series(name: str, nasa_trace: Path = NASA_TRACE) -> Floats:
    """A named series of :data:`SERIES_NAMES`."""
    return load_nasa(nasa_trace) if name == "nasa-http" else generated(name)


# --- Candidates ------------------------------------------------------------------------------


def candidates() -> tuple[Candidate, ...]:
    """Every candidate, ours first."""
    return (
        Candidate(
            "seasonal (ours, numpy)",
            None,
            "profile x last-hour level ratio; the profile (mean of ±10-min windows) over 5 weeks "
            "at the same minute of the week or over 7 days at the same minute of the day, "
            "whichever did better at hourly origins over the last week; upper from the quantile "
            "of its own relative errors there",
            _ours,
        ),
        Candidate(
            "statsforecast MSTL",
            "statsforecast",
            "MSTL(season_length=[96, 672], trend_forecaster=AutoETS(model='ZZN')) on 15-min "
            "means, level=[80]",
            _statsforecast,
        ),
        Candidate(
            "statsmodels MSTL+ETS",
            "statsmodels",
            "MSTL(periods=(96, 672)) on 15-min means; seasonal parts repeated from their last "
            "cycle; ETSModel(add, damped additive trend) on the rest, 80 % interval",
            _statsmodels,
        ),
        Candidate(
            "Prophet",
            "prophet",
            "Prophet(daily Fourier order 10, weekly 3, no yearly, interval_width=0.8) on 15-min "
            "means (missing ones dropped)",
            _prophet,
        ),
    )


def _ours(history: Floats, horizon: int, quantile: float) -> tuple[Floats, Floats]:
    result = forecast.fit(history, horizon_min=horizon, quantile=quantile)
    return np.array(result.mean), np.array(result.upper)


def _statsforecast(history: Floats, horizon: int, quantile: float) -> tuple[Floats, Floats]:
    from statsforecast.models import MSTL, AutoETS

    points = _coarse(history)
    steps = _coarse_steps(horizon)
    level = round(100 * (2 * quantile - 1))
    model = MSTL(season_length=[DAILY_POINTS, WEEKLY_POINTS], trend_forecaster=AutoETS(model="ZZN"))
    out = model.fit(y=points).predict(h=steps, level=[level])
    return _to_minutes(history, out["mean"], out[f"hi-{level}"], horizon, quantile)


def _statsmodels(history: Floats, horizon: int, quantile: float) -> tuple[Floats, Floats]:
    import pandas as pd
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel
    from statsmodels.tsa.seasonal import MSTL

    points = _coarse(history)
    steps = _coarse_steps(horizon)
    parts = MSTL(points, periods=(DAILY_POINTS, WEEKLY_POINTS)).fit()
    seasonal = np.asarray(parts.seasonal).reshape(len(points), -1)
    rest = points - seasonal.sum(axis=1)
    # A pandas series: ETS prediction intervals fail on a bare array in statsmodels 0.15.
    ets = ETSModel(pd.Series(rest), error="add", trend="add", damped_trend=True).fit(disp=False)
    frame = ets.get_prediction(start=len(points), end=len(points) + steps - 1).summary_frame(
        alpha=2 * (1 - quantile)
    )
    ahead = np.arange(steps)
    repeat = sum(
        seasonal[len(points) - period + ahead % period, k]
        for k, period in enumerate((DAILY_POINTS, WEEKLY_POINTS))
    )
    mean = np.asarray(frame["mean"]) + repeat
    upper = np.asarray(frame["pi_upper"]) + repeat
    return _to_minutes(history, mean, upper, horizon, quantile)


def _prophet(history: Floats, horizon: int, quantile: float) -> tuple[Floats, Floats]:
    import logging

    import pandas as pd
    from prophet import Prophet

    for logger in ("cmdstanpy", "prophet"):
        logging.getLogger(logger).setLevel(logging.WARNING)
    points = _bucket_means(history)
    steps = _coarse_steps(horizon)
    stamps = pd.date_range(EPOCH, periods=len(points) + steps, freq=f"{BUCKET}min")
    known = np.isfinite(points)
    model = Prophet(
        daily_seasonality=10,
        weekly_seasonality=3,
        yearly_seasonality=False,
        interval_width=2 * quantile - 1,
    )
    model.fit(pd.DataFrame({"ds": stamps[: len(points)][known], "y": points[known]}))
    out = model.predict(pd.DataFrame({"ds": stamps[len(points) :]}))
    mean, upper = np.asarray(out["yhat"]), np.asarray(out["yhat_upper"])
    return _to_minutes(history, mean, upper, horizon, quantile)


def _coarse_steps(horizon: int) -> int:
    return -(-horizon // BUCKET)


def _bucket_means(history: Floats) -> Floats:
    """15-minute means of the history, aligned to its end (the oldest partial bucket dropped);
    NaN where a bucket has no known minute."""
    usable = len(history) - len(history) % BUCKET
    blocks = history[len(history) - usable :].reshape(-1, BUCKET)
    known = np.isfinite(blocks)
    count = known.sum(axis=1)
    total = np.where(known, blocks, 0.0).sum(axis=1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _coarse(history: Floats) -> Floats:
    """15-minute means with gaps filled (MSTL takes no NaN): from a week earlier, else a day
    earlier, else by interpolation, oldest first so that fills can chain."""
    points = _bucket_means(history)
    for i in np.flatnonzero(~np.isfinite(points)):
        for lag in (WEEKLY_POINTS, DAILY_POINTS):
            if i >= lag and np.isfinite(points[i - lag]):
                points[i] = points[i - lag]
                break
    known = np.isfinite(points)
    if not known.all():
        idx = np.arange(len(points))
        points = np.interp(idx, idx[known], points[known])
    return points


def _to_minutes(
    history: Floats, mean: Iterable[float], upper: Iterable[float], horizon: int, quantile: float
) -> tuple[Floats, Floats]:
    """Per-minute mean and upper bound from 15-minute ones: each step held for its minutes,
    and the bound widened by the spread of minutes around their 15-minute mean."""
    coarse_mean = np.maximum(np.repeat(np.asarray(list(mean), dtype=np.float64), BUCKET), 0.0)
    coarse_upper = np.repeat(np.asarray(list(upper), dtype=np.float64), BUCKET)
    half = np.maximum(coarse_upper - coarse_mean, 0.0)
    minute = _minute_spread(history, quantile) * coarse_mean
    minute_mean = coarse_mean[:horizon]
    return minute_mean, (coarse_mean + np.hypot(half, minute))[:horizon]


def _minute_spread(history: Floats, quantile: float) -> float:
    """The ``quantile`` of (minute / its 15-minute mean - 1) over the last week of history."""
    week = history[-WEEK:]
    usable = len(week) - len(week) % BUCKET
    blocks = week[len(week) - usable :].reshape(-1, BUCKET)
    means = _bucket_means(week)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = blocks / means - 1.0
    finite = relative[np.isfinite(relative)]
    return float(np.quantile(finite, quantile)) if finite.size else 0.0


# --- Measuring -------------------------------------------------------------------------------


def origins(length: int, count: int = 24) -> list[int]:
    """``count`` origins (first unknown minute) 14 hours apart, the last one leaving a full
    horizon, each with five weeks of history before it."""
    last = length - HORIZON_MIN
    found = [last - k * ORIGIN_STEP_MIN for k in range(count)]
    return sorted(o for o in found if o >= HISTORY_MIN)


def score(candidate: Candidate, x: Floats, at: Sequence[int]) -> Scores:
    """Fit ``candidate`` at every origin on the five weeks before it and score its forecasts."""
    fit_s: list[float] = []
    fit_cpu_s: list[float] = []
    model_abs, naive_abs, covered = [], [], []
    for origin in at:
        history = x[origin - HISTORY_MIN : origin]
        start, start_cpu = time.perf_counter(), cpu_s()
        mean, upper = candidate.forecast(history, HORIZON_MIN, QUANTILE)
        fit_s.append(time.perf_counter() - start)
        fit_cpu_s.append(cpu_s() - start_cpu)
        actual = x[origin : origin + HORIZON_MIN]
        naive = x[origin - WEEK : origin - WEEK + HORIZON_MIN]
        model_abs.append(np.abs(actual - mean))
        naive_abs.append(np.abs(actual - naive))
        covered.append(np.where(np.isfinite(actual), actual <= upper, np.nan))
    return Scores(
        origins=tuple(at),
        fit_s=tuple(fit_s),
        fit_cpu_s=tuple(fit_cpu_s),
        model_abs=np.array(model_abs),
        naive_abs=np.array(naive_abs),
        covered=np.array(covered),
    )


def install_size(distribution: str) -> tuple[float, tuple[str, ...]]:
    """MB on disk of ``distribution`` and the distributions it needs that the base ``henge``
    install does not, from their recorded files; and their names."""
    new = sorted(_closure(distribution) - _closure("henge"))
    return sum(_files_size(name) for name in new) / 1e6, tuple(new)


def _files_size(name: str) -> int:
    """Bytes of the installed files that ``name``'s record lists."""
    total = 0
    for file in metadata.distribution(name).files or ():
        path = Path(str(file.locate()))
        if path.is_file():
            total += path.stat().st_size
    return total


def _closure(name: str) -> set[str]:
    """The installed distributions ``name`` needs, itself included (no extras)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [name]
    while todo:
        current = canonicalize_name(todo.pop())
        if current in seen:
            continue
        try:
            requires = metadata.distribution(current).requires or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(current)
        for line in requires:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def installed(candidate: Candidate) -> bool:
    if candidate.distribution is None:
        return True
    try:
        metadata.distribution(candidate.distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def cpu_s() -> float:
    """CPU seconds used so far by this process and its waited-for children."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def time_many(count: int = 1000, seed: int = 2) -> tuple[float, float]:
    """Wall and CPU seconds to fit the chosen forecaster on ``count`` five-week series in one
    process (the generated diurnal shape, each series scaled and noised differently)."""
    base = generated("diurnal", seed)[:HISTORY_MIN]
    rng = np.random.default_rng(seed)
    start, start_cpu = time.perf_counter(), cpu_s()
    for _ in range(count):
        history = base * rng.uniform(0.5, 2.0) * np.exp(rng.normal(0.0, 0.05, HISTORY_MIN))
        forecast.fit(history, horizon_min=HORIZON_MIN, quantile=QUANTILE)
    return time.perf_counter() - start, cpu_s() - start_cpu


# --- Report ----------------------------------------------------------------------------------


def error_trajectory(name: str, step_h: int = 12) -> list[tuple[int, float | None]]:
    """The chosen forecaster's reported ``error`` on a generated series whose level or pattern
    changes, every ``step_h`` hours from two days before the change to the end: (hours since the
    change, error)."""
    x = generated(name)
    change = len(x) - (SHIFT_DAYS if name == "level-shift" else BREAK_DAYS) * DAY
    out = []
    for origin in range(change - 2 * DAY, len(x) + 1, step_h * 60):
        result = forecast.fit(x[origin - HISTORY_MIN : origin], horizon_min=HORIZON_MIN)
        out.append(((origin - change) // 60, result.error))
    return out


def compare(
    series_names: Sequence[str] = SERIES_NAMES,
    *,
    out: Path,
    nasa_trace: Path = NASA_TRACE,
    origin_count: int = 24,
    many: int = 1000,
    only: Sequence[str] | None = None,
) -> str:
    """Measure every installed candidate (``only``: those whose name starts with one of these)
    on the named series (:data:`SERIES_NAMES`), write the markdown report to ``out`` and return
    it. ``many``: also time the chosen forecaster on that many five-week series (0: skip)."""
    chosen = [c for c in candidates() if only is None or c.name.startswith(tuple(only))]
    data = {name: series(name, nasa_trace) for name in series_names}
    rows: list[tuple[Candidate, dict[str, Scores]]] = []
    skipped: list[str] = []
    for candidate in chosen:
        if not installed(candidate):
            skipped.append(f"{candidate.name} (`{candidate.distribution}` is not installed)")
            continue
        scored = {
            name: score(candidate, x, origins(len(x), origin_count)) for name, x in data.items()
        }
        rows.append((candidate, scored))
    lines = [
        *_preamble(origin_count),
        *_candidate_table(rows),
        "",
        *_accuracy_table(rows, data),
        "",
        *_size_details(rows),
        *_trajectories(),
    ]
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped) + "."]
    if many:
        wall, cpu = time_many(many)
        lines += [
            "",
            f"The chosen forecaster on {many:,} five-week series in one process: {cpu:.1f} CPU s "
            f"({1000 * cpu / many:.1f} ms per series), {wall:.1f} s wall.",
        ]
    text = "\n".join(lines) + "\n"
    out.write_text(text)
    return text


def _preamble(origin_count: int) -> list[str]:
    return [
        "# Input-rate forecasters compared",
        "",
        f"Each fit: {HISTORY_MIN:,} minutes (5 weeks) of history, a {HORIZON_MIN}-minute forecast "
        f"with upper quantile {QUANTILE}; up to {origin_count} origins "
        f"{ORIGIN_STEP_MIN // 60} h apart over the last two weeks of each series. MASE@h: mean "
        "absolute error over leads 1..h divided by that of seasonal-naive (the same minute a "
        "week earlier) on the same minutes; < 1 beats it. Coverage: the share of actual minutes "
        "(leads 1..60) at or below the upper bound (target 0.9). Fit time: the median time of "
        "one fit and forecast, in CPU seconds (this process and its children) and wall seconds. "
        "NASA-HTTP: outages (zero runs as :func:`load_nasa` defines them) "
        "are missing minutes, given to each candidate as NaN and left out of the scores.",
        "",
    ]


def _candidate_table(rows: Sequence[tuple[Candidate, dict[str, Scores]]]) -> list[str]:
    lines = [
        "| candidate | configuration | install MB | fit CPU s per 5-week series (median) "
        "| fit wall s (median) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for candidate, scored in rows:
        fits = [f for scores in scored.values() for f in scores.fit_cpu_s]
        walls = [f for scores in scored.values() for f in scores.fit_s]
        size = (
            "0"
            if candidate.distribution is None
            else f"{install_size(candidate.distribution)[0]:.1f}"
        )
        cpu = statistics.median(fits) if fits else math.nan
        wall = statistics.median(walls) if walls else math.nan
        lines.append(
            f"| {candidate.name} | {candidate.configuration} | {size} | {cpu:.3f} | {wall:.3f} |"
        )
    return lines


def _accuracy_table(
    rows: Sequence[tuple[Candidate, dict[str, Scores]]], data: dict[str, Floats]
) -> list[str]:
    header = ["candidate", "series", "origins", *(f"MASE@{h}" for h in LEADS), "coverage"]
    header.append("fit CPU s")
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for candidate, scored in rows:
        for name, scores in scored.items():
            lines.append(_accuracy_row(candidate.name, name, scores))
            if name == "level-shift":
                shift = len(data[name]) - SHIFT_DAYS * DAY
                lines.append(
                    _accuracy_row(candidate.name, f"{name}, after it", scores.since(shift))
                )
    return lines


def _accuracy_row(candidate: str, name: str, scores: Scores) -> str:
    fit = statistics.median(scores.fit_cpu_s) if scores.fit_cpu_s else math.nan
    cells = [candidate, name, str(len(scores.origins))]
    cells += [f"{scores.mase(h):.3f}" for h in LEADS]
    cells += [f"{scores.coverage():.3f}", f"{fit:.3f}"]
    return "| " + " | ".join(cells) + " |"


def _size_details(rows: Sequence[tuple[Candidate, dict[str, Scores]]]) -> list[str]:
    lines = ["Install size, per distribution new to the base `henge` install (MB on disk):", ""]
    for candidate, _ in rows:
        if candidate.distribution is None:
            lines.append(f"- {candidate.name}: nothing new (numpy is already a dependency)")
            continue
        parts = sorted(_sizes(install_size(candidate.distribution)[1]), key=lambda p: -p[1])
        listed = ", ".join(f"{name} {mb:.1f}" for name, mb in parts)
        lines.append(f"- {candidate.name}: {listed}")
    return [*lines, ""]


def _sizes(names: Iterable[str]) -> list[tuple[str, float]]:
    return [(name, _files_size(name) / 1e6) for name in names]


def _trajectories() -> list[str]:
    lines = [
        "The chosen forecaster's own `error` (recent MASE against seasonal-naive) around a "
        "change, as (hours since the change: error):",
        "",
    ]
    for name in ("level-shift", "pattern-break", "batches"):
        points = ", ".join(
            f"{hours:+d} h: {'-' if err is None else f'{err:.2f}'}"
            for hours, err in error_trajectory(name)
        )
        lines.append(f"- {name}: {points}")
    return lines
