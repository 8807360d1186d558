"""Figures of simulated runs, in the style of the thesis' figures (PNG files).

matplotlib is imported inside the functions, and figures are drawn on the Agg canvas directly
(no ``pyplot``, no global backend switch), so importing this module costs nothing and works
without a display. matplotlib comes with the project's ``bench`` extra, not with the server:
the commands that draw call :func:`require_plotting` first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from scheduler.sim.summary import satisfaction_points
from scheduler.sim.types import SimResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PLOTTING_EXTRA = "bench"
"""The optional dependencies (``pip install 'henge[bench]'``) that bring matplotlib."""


class PlottingUnavailable(RuntimeError):
    """matplotlib is not installed: the message says which extra brings it."""


def plotting_available() -> bool:
    """Whether matplotlib can be imported (the ``bench`` extra is installed)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def require_plotting(what: str) -> None:
    """Raise :class:`PlottingUnavailable` for ``what`` (a command) when matplotlib is missing,
    before any work is done rather than after a long run."""
    if not plotting_available():
        raise PlottingUnavailable(
            f"{what} draws figures with matplotlib, which this installation lacks: install the "
            f"{PLOTTING_EXTRA!r} extra (pip install 'henge[{PLOTTING_EXTRA}]'; `make setup` "
            "installs it)"
        )


MAX_ACTION_LABELS = 40
"""Only the first this many actions get a job-name label; every action still gets its line."""

ACTION_COLORS = {
    "reconfigure": "tab:green",
    "reduce": "tab:red",
    "revert": "tab:purple",
    "replace": "tab:orange",
    "admit": "tab:gray",
}


def new_figure(rows: int, height: float) -> Figure:
    """A figure of ``rows`` axes one above the other, sharing the x axis, on the Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, height), layout="constrained")
    FigureCanvasAgg(figure)
    figure.subplots(rows, 1, sharex=True, squeeze=False)
    return figure


def plot_run(result: SimResult, path: Path, *, max_labels: int = MAX_ACTION_LABELS) -> Path:
    """Top: total and maximum utility (and the oracle, dashed) over minutes from the scheduler's
    start, with every action as a vertical line labelled with its job (the first ``max_labels``
    only; the title says when labels were left out). Bottom: each job's utility. The warm-up
    before the scheduler starts (negative minutes) is shaded."""
    figure = new_figure(2, 8.0)
    top, bottom = figure.axes
    samples = sorted(result.samples, key=lambda s: s.t_s)
    minutes = [s.t_s / 60.0 for s in samples]
    top.step(minutes, [s.total_utility for s in samples], label="total utility", where="post")
    top.step(
        minutes, [s.max_utility for s in samples], label="max utility", color="k", where="post"
    )
    if any(s.oracle_utility is not None for s in samples):
        oracle = [
            s.oracle_utility if s.oracle_utility is not None else float("nan") for s in samples
        ]
        top.step(minutes, oracle, label="oracle", color="tab:orange", linestyle="--", where="post")
    shown = draw_actions(top, result.actions, max_labels)
    title = f"{result.scenario} / {result.policy} (seed {result.seed})"
    if shown < len(result.actions):
        title += f": job labels on the first {shown} of {len(result.actions)} actions"
    top.set_title(title)
    top.set_ylabel("utility")
    top.legend(loc="lower right", fontsize="small")
    for job in result.jobs:
        points = [
            (m, s.utilities[job.name])
            for m, s in zip(minutes, samples, strict=True)
            if job.name in s.utilities
        ]
        if points:
            xs, ys = zip(*points, strict=True)
            bottom.step(xs, ys, label=job.name, where="post")
    bottom.set_xlabel("minutes from scheduler start")
    bottom.set_ylabel("job utility")
    if result.jobs:
        bottom.legend(loc="upper left", fontsize="x-small", ncol=min(4, len(result.jobs)))
    for axes in (top, bottom):
        _shade_warmup(axes, minutes)
    figure.savefig(path, format="png", dpi=110)
    return path


class TimedAction(Protocol):
    @property
    def t_s(self) -> float: ...
    @property
    def kind(self) -> str: ...
    @property
    def job(self) -> str: ...


def draw_actions(axes: Axes, actions: Sequence[TimedAction], max_labels: int) -> int:
    """Each action as a vertical line at its minute, coloured by kind, the first ``max_labels``
    labelled with their job; returns how many got a label."""
    transform = axes.get_xaxis_transform()
    shown = 0
    for action in sorted(actions, key=lambda a: a.t_s):
        minute = action.t_s / 60.0
        color = ACTION_COLORS.get(action.kind, "tab:brown")
        axes.axvline(minute, color=color, linewidth=0.8, alpha=0.6)
        if shown < max_labels:
            axes.text(
                minute,
                0.98,
                f" {action.job}",
                transform=transform,
                rotation=90,
                fontsize="x-small",
                va="top",
                ha="right",
                color=color,
            )
            shown += 1
    for kind in sorted({a.kind for a in actions}):
        axes.plot([], [], color=ACTION_COLORS.get(kind, "tab:brown"), linewidth=0.8, label=kind)
    return shown


def _shade_warmup(axes: Axes, minutes: list[float]) -> None:
    if minutes and minutes[0] < 0:
        axes.axvspan(minutes[0], 0.0, color="0.9", zorder=0)


def plot_cdf(results: Mapping[str, SimResult], path: Path) -> Path:
    """CDF of SLO satisfaction over time (time-weighted, as in the summary) for each policy of
    one scenario; ``results`` maps policy name to its run."""
    figure = new_figure(1, 5.0)
    axes = figure.axes[0]
    for policy, result in results.items():
        points = sorted(p for p in satisfaction_points(result) if p[1] > 0)
        total = sum(w for _, w in points)
        if total <= 0:
            continue
        xs, ys, cumulative = [], [], 0.0
        for value, weight in points:
            cumulative += weight
            xs.append(value)
            ys.append(cumulative / total)
        axes.step([xs[0], *xs], [0.0, *ys], where="post", label=policy)
    scenarios = sorted({r.scenario for r in results.values()})
    axes.set_title(f"SLO satisfaction: {', '.join(scenarios)}")
    axes.set_xlabel("SLO satisfaction (total utility / max utility)")
    axes.set_ylabel("fraction of time")
    axes.set_ylim(0.0, 1.02)
    if results:
        axes.legend(loc="upper left", fontsize="small")
    figure.savefig(path, format="png", dpi=110)
    return path
