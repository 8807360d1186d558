"""The ``dry-run`` realizer: logs what would change and changes nothing."""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from scheduler.core.model import Change, Replacement

log = structlog.get_logger("henge.realize.dry_run")


class DryRunRealizer:
    name = "dry-run"

    def apply(self, changes: Sequence[Change]) -> Sequence[Change]:
        for change in changes:
            log.info(
                "dry_run.change",
                job=change.job_id,
                from_executors=change.from_executors,
                to_executors=change.to_executors,
                reason=change.reason,
            )
        return ()

    def replace(self, replacements: Sequence[Replacement]) -> Sequence[Replacement]:
        for r in replacements:
            log.info(
                "dry_run.replace", job=r.job_id, executors=list(r.executor_ids), reason=r.reason
            )
        return ()
