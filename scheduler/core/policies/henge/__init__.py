"""Henge's state machine (DESIGN §3): the ``henge-paper`` and ``henge`` policies.

- :mod:`.policy`: the state machine, one round at a time;
- :mod:`.settings`: its settings, and what ``henge`` turns on over ``henge-paper``;
- :mod:`.state`: what it remembers between rounds, and the JSON form of that;
- :mod:`.sizing`: how many executors a reconfiguration gives or a give-back takes;
- :mod:`.model`: the per-job performance model ``henge`` fits online.
"""

from scheduler.core.policies.henge.model import JobModel, observe, predict, smallest
from scheduler.core.policies.henge.policy import (
    PAPER,
    PRODUCT,
    HengePolicy,
    paper_policy,
    product_policy,
)
from scheduler.core.policies.henge.settings import PRODUCT_DEFAULTS, PRODUCT_SWITCHES, HengeSettings
from scheduler.core.policies.henge.sizing import model_need, model_target, paper_extra
from scheduler.core.policies.henge.state import Configuration, HengeState, LastAction, Step

__all__ = [
    "PAPER",
    "PRODUCT",
    "PRODUCT_DEFAULTS",
    "PRODUCT_SWITCHES",
    "Configuration",
    "HengePolicy",
    "HengeSettings",
    "HengeState",
    "JobModel",
    "LastAction",
    "Step",
    "model_need",
    "model_target",
    "observe",
    "paper_extra",
    "paper_policy",
    "predict",
    "product_policy",
    "smallest",
]
