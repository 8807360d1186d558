"""The ``dry-run`` realizer: logs what would change and changes nothing."""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from scheduler.core.model import Change

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
