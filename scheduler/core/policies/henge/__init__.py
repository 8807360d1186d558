"""Henge's state machine (DESIGN §3): the ``henge-paper`` and ``henge`` policies.

- :mod:`.policy`: the paper's state machine, one round at a time (``henge-paper``), with
  :mod:`.settings`, :mod:`.state` and :mod:`.sizing` (eq. 2.4);
- :mod:`.product`: the product policy ``henge``, with :mod:`.product_settings` and
  :mod:`.product_state`;
- what the product policy reads: :mod:`.model` (the per-job model fitted online),
  :mod:`.outlook` (what a job needs, and its utility curve) and :mod:`.allocate` (the offers to
  the allocation solver, and the move toward its allocation).
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
