"""Why the agent will not start. Both are raised by :func:`henge_agent.attach` only, before the
agent runs: once it runs, nothing it meets reaches the job."""

from __future__ import annotations


class AgentRefused(RuntimeError):
    """The agent will not run on this application (the message says why and what to change)."""


class AgentConfigError(AgentRefused):
    """A setting is missing or invalid; the message names it and where to set it."""
