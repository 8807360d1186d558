"""The ``agent`` realizer: the stored target is the whole action; each job's agent fetches it
with its next report and resizes the job live."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.core.model import Change


class AgentRealizer:
    name = "agent"

    def apply(self, changes: Sequence[Change]) -> Sequence[Change]:
        return changes
