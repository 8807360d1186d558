"""The ``agent`` realizer: the stored target (and the executors to replace) is the whole
action; each job's agent fetches it with its next report and resizes the job live."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.core.model import Change, Replacement


class AgentRealizer:
    name = "agent"

    def apply(self, changes: Sequence[Change]) -> Sequence[Change]:
        return changes

    def replace(self, replacements: Sequence[Replacement]) -> Sequence[Replacement]:
        """The stored request is the whole action: the job's agent reads it in the answer to
        its next report, stops those executors and asks Spark for its total again."""
        return replacements
