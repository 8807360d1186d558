"""Assembling the running service: registry engine, cluster view, API and scheduler loop."""

from __future__ import annotations

import gc
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import structlog
import uvicorn
from apscheduler.schedulers.background import BackgroundScheduler
from fastapi import FastAPI
from sqlalchemy import Engine, make_url

from scheduler.api.app import create_app
from scheduler.clock import utc_now
from scheduler.cluster.port import ClusterSource
from scheduler.cluster.static import StaticCluster
from scheduler.config import Settings
from scheduler.core.decide import CoreSettings
from scheduler.leader import Leadership
from scheduler.prometheus import ServiceMetrics
from scheduler.realize.port import Realizer
from scheduler.realize.registry import KUBE_REALIZERS, make_realizer
from scheduler.registry import forecasts, history
from scheduler.registry import repository as repo
from scheduler.registry.engine import make_engine, make_session_factory
from scheduler.registry.migrate import current_revision, head_revision
from scheduler.registry.sql_round_store import SqlRoundStore
from scheduler.round.loop import LoopSettings, SchedulerLoop
from scheduler.web import mount_dashboard

if TYPE_CHECKING:
    from scheduler.kube.client import KubeApi
    from scheduler.kube.settings import KubeSettings

log = structlog.get_logger("henge.service")

ROLL_UP_LAG = timedelta(seconds=30)
"""Windows received this recently wait for the next roll-up: a request may still be committing
windows it stamped earlier."""
FORECAST_BATCH = 50
"""Jobs whose forecasts one transaction fits and stores."""


class SchemaBehindError(RuntimeError):
    pass


def check_schema(engine: Engine) -> None:
    """Refuse to serve a registry whose schema is not the one this version expects."""
    current, head = current_revision(engine), head_revision()
    if current != head:
        raise SchemaBehindError(
            f"the registry schema is at revision {current or 'none (empty database)'} but this "
            f"version needs {head}: run `henge migrate` first"
        )


def kube_settings(settings: Settings) -> KubeSettings:
    """What the kubernetes cluster view and the spark-operator realizer are configured with."""
    from scheduler.kube.settings import KubeSettings

    return KubeSettings(
        namespaces=tuple(settings.managed_namespaces),
        executor_selector=settings.kube_executor_selector,
        job_label=settings.kube_job_label,
        kubeconfig=settings.kubeconfig,
        context=settings.kube_context,
    )


def make_cluster_source(settings: Settings, *, kube_api: KubeApi | None = None) -> ClusterSource:
    """The cluster view ``settings.cluster_view`` names. The kubernetes view talks to
    ``kube_api`` when given, else connects with the kubeconfig of the settings."""
    if settings.cluster_view == "static":
        return StaticCluster(
            settings.static_nodes,
            settings.static_cores_per_node,
            settings.static_memory_mb_per_node,
        )
    if settings.cluster_view == "spark-standalone":
        from scheduler.cluster.spark_standalone import SparkStandaloneCluster

        if not settings.spark_master_ui_url:
            raise ValueError(
                "the spark-standalone cluster view needs HENGE_SPARK_MASTER_UI_URL (the "
                "master's web UI, e.g. http://127.0.0.1:8080)"
            )
        return SparkStandaloneCluster(settings.spark_master_ui_url)
    if settings.cluster_view == "kubernetes":
        from scheduler.cluster.kubernetes import KubernetesCluster
        from scheduler.kube.client import KubeApi

        kube = kube_settings(settings)
        return KubernetesCluster(
            kube_api or KubeApi.from_config(kube.kubeconfig, kube.context), kube
        )
    raise ValueError(
        f"unknown cluster view {settings.cluster_view!r}; "
        "known: static, spark-standalone, kubernetes"
    )


def realizer_for(settings: Settings, *, kube_api: KubeApi | None = None) -> Realizer:
    """The realizer ``settings.realizer`` names; one acting through Kubernetes gets the
    Kubernetes settings and talks to ``kube_api`` when given, else connects."""
    kube = kube_settings(settings) if settings.realizer in KUBE_REALIZERS else None
    return make_realizer(settings.realizer, kube, kube_api=kube_api)


def core_settings(settings: Settings) -> CoreSettings:
    core = CoreSettings(
        policy=settings.policy,
        policy_params=dict(settings.policy_params),
        stale_after_s=settings.stale_after_s,
        recovery_observe_s=settings.recovery_observe_s,
    )
    core.build_policy()  # fail at start-up, not at the first round, on a bad name or parameter
    return core


@dataclass
class Service:
    settings: Settings
    engine: Engine
    app: FastAPI
    loop: SchedulerLoop
    metrics: ServiceMetrics
    leadership: Leadership
    clock: Callable[[], datetime] = utc_now
    """The clock the API stamps reports with: the purge and the roll-up read it too."""

    def purge(self) -> int:
        """Roll up what the history lacks, delete metric windows and rounds (with their
        actions and allocations) older than the retention and input hours older than
        ``history_days``, then let the registry reuse their space; returns how many windows
        went."""
        now = self.clock()
        cutoff = repo.retention_cutoff(now, self.settings.retention_days)
        history_cutoff = repo.retention_cutoff(now, self.settings.history_days)
        self.roll_up_history()  # nothing a purge takes may be missing from the history
        with make_session_factory(self.engine)() as session, session.begin():
            windows = repo.purge_windows(session, cutoff)
            rounds = repo.purge_rounds(session, cutoff)
            hours = history.purge_input_hours(session, history_cutoff)
        repo.reclaim_purged_space(self.engine)  # also what rounds rewrote since the last one
        log.info(
            "retention.purged",
            windows=windows,
            rounds=rounds,
            input_hours=hours,
            days=self.settings.retention_days,
            history_days=self.settings.history_days,
        )
        return windows

    def roll_up_history(self) -> int:
        """Add the metric windows received since the last roll-up (but for the last
        :data:`ROLL_UP_LAG`) to each job's input per minute; returns how many were read."""
        until = self.clock() - ROLL_UP_LAG
        total = 0
        while True:
            with make_session_factory(self.engine)() as session, session.begin():
                read = history.roll_up(session, until)
            total += read
            if read < history.ROLL_UP_BATCH:
                return total

    def fit_forecasts(self) -> int:
        """Fit every job's input forecast from its input history and store it, a few jobs a
        transaction; returns how many were fitted."""
        now = self.clock()
        sessions = make_session_factory(self.engine)
        with sessions() as session:
            job_ids = forecasts.forecast_jobs(session)
        fitted = 0
        for start in range(0, len(job_ids), FORECAST_BATCH):
            with sessions() as session, session.begin():
                chunk = job_ids[start : start + FORECAST_BATCH]
                fitted += len(forecasts.fit_jobs(session, chunk, now, self.settings.history_days))
        log.info("forecasts.fitted", jobs=fitted, of=len(job_ids))
        return fitted

    def start_background(self) -> BackgroundScheduler:
        """Rounds every ``round_interval_s`` (one at a time, late runs coalesced), the input
        history's roll-up every ``history_rollup_s``, the forecasts' fit every
        ``forecast_interval_s`` and the retention purge every ``purge_interval_s``."""
        scheduler = BackgroundScheduler(timezone="UTC")
        # One run at a time, late runs coalesced; a round runs however late it is.
        every = {"trigger": "interval", "max_instances": 1, "coalesce": True}
        if self.settings.scheduler_enabled:
            scheduler.add_job(
                self._safe_round,
                seconds=self.settings.round_interval_s,
                id="round",
                misfire_grace_time=None,
                **every,
            )
        scheduler.add_job(
            self.roll_up_history, seconds=self.settings.history_rollup_s, id="history", **every
        )
        scheduler.add_job(
            self.fit_forecasts, seconds=self.settings.forecast_interval_s, id="forecast", **every
        )
        scheduler.add_job(self.purge, seconds=self.settings.purge_interval_s, id="purge", **every)
        scheduler.start()
        return scheduler

    def _safe_round(self) -> None:
        # A failing round must not stop the schedule; the next one starts from stored state.
        try:
            leading = self.leadership.is_leader()
            self.metrics.leader.set(1 if leading else 0)
            if leading:
                self.loop.run_round()
        except Exception:
            log.exception("round.failed")


def build_service(
    settings: Settings,
    *,
    cluster: ClusterSource | None = None,
    realizer: Realizer | None = None,
    clock: Callable[[], datetime] = utc_now,
    metrics: ServiceMetrics | None = None,
) -> Service:
    """The service as ``henge serve`` runs it; the demo swaps in a simulated cluster and clock,
    a worker of several its shared metrics."""
    engine = make_engine(settings.database_url)
    check_schema(engine)
    metrics = metrics or ServiceMetrics()
    cluster = cluster or make_cluster_source(settings)
    app = create_app(settings, engine, cluster, clock=clock, metrics=metrics)
    mount_dashboard(app)
    loop = SchedulerLoop(
        SqlRoundStore(make_session_factory(engine)),
        cluster,
        realizer or realizer_for(settings),
        core_settings(settings),
        clock,
        settings=LoopSettings(
            window_s=settings.window_s,
            sub_window_s=settings.sub_window_s,
            metrics_max_jobs=settings.metrics_max_jobs,
            failpoint=settings.failpoint,
        ),
        metrics=metrics,
        on_round=app.state.round_cache.set,
        forecasts=forecasts.RegistryForecasts(make_session_factory(engine)),
    )
    return Service(
        settings, engine, app, loop, metrics, Leadership(engine, settings.leader_retry_s), clock
    )


def serve(settings: Settings) -> None:
    """Run the API and, when enabled, the scheduler loop until interrupted (one process; see
    :mod:`scheduler.workers` for several)."""
    run_until_stopped(build_service(settings))


def run_until_stopped(
    service: Service,
    sockets: list[socket.socket] | None = None,
    *,
    background: bool = True,
) -> None:
    """Serve the API (on ``sockets`` when given, else on the settings' address) and run the
    background work, until the server stops; then release the leadership and the registry's
    connections."""
    settings = service.settings
    config = uvicorn.Config(
        service.app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
    )
    log.info(
        "serve.start",
        host=settings.host,
        port=settings.port,
        database=make_url(settings.database_url).render_as_string(hide_password=True),
        policy=settings.policy,
        realizer=settings.realizer,
        rounds=settings.scheduler_enabled,
        round_interval_s=settings.round_interval_s,
    )
    # Whatever start-up built lives as long as the process: moved out of the collector's sight,
    # it is not walked again by every full collection (on a busy server, a pause of ~0.1 s that
    # each request in flight waits out).
    gc.collect()
    gc.freeze()
    scheduler = service.start_background() if background else None
    try:
        uvicorn.Server(config).run(sockets=sockets)
    finally:
        if scheduler is not None:
            scheduler.shutdown(wait=True)
        service.leadership.release()
        service.engine.dispose()
