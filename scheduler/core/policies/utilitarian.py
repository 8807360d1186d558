"""``utilitarian``: Cilantro's utilitarian policy (Bhardwaj et al., OSDI 2023) (DESIGN §4).

The same learned per-job models and the same allocation solver as ``henge``, re-solved every
round and applied at once, with no state machine: no quiesce, no judging or reverting a move,
no blacklist, and executors a job does not need are given back as soon as the model says so.
Next to ``henge`` it shows what the state machine adds.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

from scheduler.core.admission import AdmissionRule
from scheduler.core.model import Plan, Snapshot
from scheduler.core.policies.henge.product import HengeProductPolicy, ProductRound
from scheduler.core.policies.henge.product_settings import ProductSettings
from scheduler.core.policies.henge.product_state import ProductState
from scheduler.core.policy import build_settings

NAME = "utilitarian"
WITHOUT_STATE_MACHINE: Mapping[str, Any] = {
    "quiesce_s": 0.0,
    "stabilization_s": 0.0,
    "lend_between_rises": False,
    "backlog_debt": 0.0,
}
"""Overrides that take away the waiting: a move is followed by the next one at once, and a
surplus is given back in the round it appears. (With no quiesce no rise is ever seen, so no
rises are counted either.) A cut costs the utility it loses while it lasts, as Cilantro
values an allocation, not the backlog it builds."""


class UtilitarianPolicy(HengeProductPolicy):
    # (class variables: mypyc compiles this class, and would make plain attributes per-instance
    # defaults that the registry could not read from the class)
    name: ClassVar[str] = NAME
    admission_rule: ClassVar[AdmissionRule] = AdmissionRule.FITS

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> UtilitarianPolicy:
        return cls(build_settings(ProductSettings, {**WITHOUT_STATE_MACHINE, **params}))

    def decide(
        self, snapshot: Snapshot, state: ProductState, now: datetime
    ) -> tuple[Plan, ProductState]:
        round_ = _UtilitarianRound(self.settings, snapshot, state, now)
        return round_.run(), round_.state


class _UtilitarianRound(ProductRound):
    def run(self) -> Plan:
        self.housekeeping()
        planned = self.plan_move()
        if planned is not None:
            return planned
        given = self.give_back()
        if given is not None:
            return given
        return self.none("the allocation is the best the models know")
