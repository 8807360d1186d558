"""The simulated cluster: nodes, and executors placed on them (DESIGN §5.4, docs/simulator.md).

An executor is *pending* while no ready node has room for it (cores and memory), *starting*
from its placement until ``executor_start_delay_s`` later, then *running*. Pending executors
are placed in request order (first fit over the nodes in order, or on the node with the most
free cores under ``spread``) whenever room appears. A node that fails takes its executors with
it: they become pending again and are re-placed when room exists.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from scheduler.core.model import ClusterView, NodeView
from scheduler.sim.scenario import ClusterSpec

NEVER = math.inf


@dataclass(eq=False)
class Node:
    name: str
    cores: float
    memory_mb: float
    ready: bool = True
    slowdown: float = 1.0
    """Interference: executors here take this many times longer per row."""
    cores_used: float = 0.0
    memory_used: float = 0.0

    def fits(self, cores: float, memory_mb: float) -> bool:
        return (
            self.ready
            and self.cores - self.cores_used >= cores - 1e-9
            and self.memory_mb - self.memory_used >= memory_mb - 1e-9
        )


@dataclass(eq=False)
class Executor:
    job: str
    cores: int
    memory_mb: int
    node: Node | None = None
    ready_at: float = NEVER
    """When it starts running tasks; ``NEVER`` while pending."""
    id: str = ""
    """Its id within the job, as Spark numbers executors: "1", "2", ... in request order."""
    slowdown: float = 1.0
    """A fault of this executor alone (a bad disk, long pauses): its tasks take this many times
    longer, on top of its node's slowdown."""
    avoid: Node | None = None
    """A node not to place it on while another fits (it replaces an executor that was slow
    there)."""

    def running(self, t: float) -> bool:
        return self.node is not None and self.ready_at <= t

    @property
    def speed(self) -> float:
        """Rows per unit of work relative to a healthy executor (1 / every slowdown)."""
        node = self.node.slowdown if self.node is not None else 1.0
        return 1.0 / (node * self.slowdown)


@dataclass
class Pool:
    """One job's executors, in request order (pending, starting and running)."""

    job: str
    cores: int
    memory_mb: int
    executors: list[Executor] = field(default_factory=list)
    requested: int = 0
    """Executors requested so far (the next one's id is this plus one)."""

    def new_executor(self) -> Executor:
        self.requested += 1
        return Executor(self.job, self.cores, self.memory_mb, id=str(self.requested))

    def running(self, t: float) -> tuple[int, float, float, float]:
        """(running executors at ``t``, their mean speed, the slowest one's speed, and the time
        the next placed executor starts running: the answer holds until then, unless the
        cluster changes)."""
        count = 0
        speed = 0.0
        slowest = 1.0
        until = NEVER
        for e in self.executors:
            if e.node is None:
                continue
            if e.ready_at <= t:
                count += 1
                own = e.speed
                speed += own
                slowest = own if count == 1 or own < slowest else slowest
            elif e.ready_at < until:
                until = e.ready_at
        return count, (speed / count if count else 1.0), slowest, until

    def running_executors(self, t: float) -> list[Executor]:
        return [e for e in self.executors if e.running(t)]


class Cluster:
    def __init__(self, spec: ClusterSpec) -> None:
        self.nodes = [Node(n.name, n.cores, n.memory_mb) for n in spec.nodes]
        self.by_name = {n.name: n for n in self.nodes}
        self.start_delay_s = spec.executor_start_delay_s
        self.spread = spec.placement == "spread"
        self.pending: list[Executor] = []
        self.pools: dict[str, Pool] = {}
        self.version = 0
        """Bumped on every change that may alter a pool's running set or speed."""

    def pool(self, job: str, cores: int, memory_mb: int) -> Pool:
        if job not in self.pools:
            self.pools[job] = Pool(job, cores, memory_mb)
        return self.pools[job]

    # ---- requests ---------------------------------------------------------------------------

    def set_count(self, pool: Pool, count: int, now: float) -> None:
        """Request or remove executors so that ``pool`` holds ``count`` (any state)."""
        count = max(0, count)
        held = len(pool.executors)
        if count > held:
            for _ in range(count - held):
                executor = pool.new_executor()
                pool.executors.append(executor)
                self.pending.append(executor)
        elif count < held:
            for executor in _removal_order(pool.executors, now)[: held - count]:
                self._release(executor)
                pool.executors.remove(executor)
        self.version += 1
        self.place_pending(now)

    def replace(self, pool: Pool, executor_ids: Iterable[str], now: float) -> list[str]:
        """Remove the named executors and request one new executor for each, placed on
        another node than the one it replaces where one has room (as a killed executor is
        replaced by the cluster manager). Returns the ids replaced (unknown ids are skipped)."""
        wanted = set(executor_ids)
        replaced: list[str] = []
        for executor in [e for e in pool.executors if e.id in wanted]:
            old_node = executor.node
            self._release(executor)
            pool.executors.remove(executor)
            fresh = pool.new_executor()
            fresh.avoid = old_node
            pool.executors.append(fresh)
            self.pending.append(fresh)
            replaced.append(executor.id)
        if replaced:
            self.version += 1
            self.place_pending(now)
        return replaced

    def slow_executor(self, pool: Pool, factor: float, now: float) -> None:
        """``factor`` > 1: the pool's oldest running executor (or oldest placed one) turns that
        much slower; 1: every executor of the pool is healthy again."""
        if factor == 1.0:
            for executor in pool.executors:
                executor.slowdown = 1.0
        else:
            placed = [e for e in pool.executors if e.node is not None]
            running = [e for e in placed if e.ready_at <= now]
            victims = running or placed
            if victims:
                victims[0].slowdown = factor
        self.version += 1

    def place_pending(self, now: float) -> None:
        still: list[Executor] = []
        for executor in self.pending:
            node = self._choose(executor)
            if node is None:
                still.append(executor)
                continue
            node.cores_used += executor.cores
            node.memory_used += executor.memory_mb
            executor.node = node
            executor.ready_at = now + self.start_delay_s
        if len(still) != len(self.pending):
            self.version += 1
        self.pending = still

    def _choose(self, executor: Executor) -> Node | None:
        fitting = [n for n in self.nodes if n.fits(executor.cores, executor.memory_mb)]
        if executor.avoid is not None and len(fitting) > 1:
            fitting = [n for n in fitting if n is not executor.avoid]
        if not fitting:
            return None
        if not self.spread:
            return fitting[0]
        return max(fitting, key=lambda n: n.cores - n.cores_used)

    def _release(self, executor: Executor) -> None:
        if executor.node is None:
            self.pending.remove(executor)
            return
        executor.node.cores_used -= executor.cores
        executor.node.memory_used -= executor.memory_mb
        executor.node = None
        executor.ready_at = NEVER

    # ---- events -----------------------------------------------------------------------------

    def fail_nodes(self, names: Iterable[str], now: float) -> None:
        """The nodes go down; their executors become pending (re-placed where room exists)."""
        lost = {self.by_name[n] for n in names}
        for node in lost:
            node.ready = False
        for pool in self.pools.values():
            for executor in pool.executors:
                if executor.node in lost:
                    self._release(executor)
                    self.pending.append(executor)
        self.version += 1
        self.place_pending(now)

    def restore_nodes(self, names: Iterable[str], now: float) -> None:
        for name in names:
            self.by_name[name].ready = True
        self.version += 1
        self.place_pending(now)

    def set_slowdown(self, names: Iterable[str], factor: float) -> None:
        for name in names:
            self.by_name[name].slowdown = factor
        self.version += 1

    # ---- views ------------------------------------------------------------------------------

    def ready_cores(self) -> float:
        return sum(n.cores for n in self.nodes if n.ready)

    def view(self, busy: Mapping[str, float], now: float) -> ClusterView:
        """Nodes with what placed executors request, and CPU use: running executors' cores times
        their job's busy fraction, plus the interfering load ``cores * (1 - 1/slowdown)``."""
        used = {n.name: n.cores * (1.0 - 1.0 / n.slowdown) for n in self.nodes}
        for pool in self.pools.values():
            fraction = min(1.0, busy.get(pool.job, 0.0))
            for e in pool.executors:
                if e.node is not None and e.ready_at <= now:
                    used[e.node.name] += e.cores * fraction
        return ClusterView(
            tuple(
                NodeView(
                    name=n.name,
                    cores=n.cores,
                    memory_mb=n.memory_mb,
                    cores_requested=n.cores_used,
                    memory_requested_mb=n.memory_used,
                    cpu_used=min(n.cores, used[n.name]) if n.ready else 0.0,
                    ready=n.ready,
                )
                for n in self.nodes
            )
        )


def _removal_order(executors: list[Executor], now: float) -> list[Executor]:
    """Pending first, then starting (latest first), then running (newest first)."""
    pending = [e for e in executors if e.node is None]
    starting = [e for e in executors if e.node is not None and e.ready_at > now]
    running = [e for e in executors if e.node is not None and e.ready_at <= now]
    by_latest = sorted(starting + running, key=lambda e: -e.ready_at)
    return pending[::-1] + by_latest
