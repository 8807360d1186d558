"""Where a round's input forecasts come from (DESIGN §8): fitted outside the round, read by it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from scheduler.core.model import InputForecast


class ForecastSource(Protocol):
    def latest(self, job_ids: Sequence[str], now: datetime) -> Mapping[str, InputForecast]:
        """The newest forecast of each of ``job_ids`` that has one, as of ``now``."""
        ...
