"""The built-in policies by name: Henge (DESIGN §3) and the baselines (DESIGN §4).

The table is written out here, so that what ``--policy NAME`` can pick is visible in one place
and importing a policy module has no side effects. The errors ``get_policy`` raises are
exported with it, for callers that report them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.core.policies.dhalion import DhalionPolicy
from scheduler.core.policies.ds2 import DS2Policy
from scheduler.core.policies.dstream_ratio import DStreamRatioPolicy
from scheduler.core.policies.henge import PAPER, paper_policy
from scheduler.core.policies.henge.product import HengeProductPolicy
from scheduler.core.policies.spark_dra import SparkDRAPolicy
from scheduler.core.policies.static import StaticPolicy
from scheduler.core.policies.utilitarian import UtilitarianPolicy
from scheduler.core.policy import Policy, PolicySettingsError, UnknownPolicyError

__all__ = [
    "PolicySettingsError",
    "UnknownPolicyError",
    "available_policies",
    "get_policy",
]

Factory = Callable[[Mapping[str, Any]], Policy[Any]]
"""Builds a policy from overrides of its settings' defaults."""

_FACTORIES: Mapping[str, Factory] = {
    PAPER: paper_policy,
    HengeProductPolicy.name: HengeProductPolicy.from_params,
    StaticPolicy.name: StaticPolicy.from_params,
    SparkDRAPolicy.name: SparkDRAPolicy.from_params,
    DStreamRatioPolicy.name: DStreamRatioPolicy.from_params,
    DS2Policy.name: DS2Policy.from_params,
    DhalionPolicy.name: DhalionPolicy.from_params,
    UtilitarianPolicy.name: UtilitarianPolicy.from_params,
}


def available_policies() -> list[str]:
    return sorted(_FACTORIES)


def get_policy(name: str, params: Mapping[str, Any] | None = None) -> Policy[Any]:
    """Build the policy called ``name`` with ``params`` overriding its settings' defaults."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise UnknownPolicyError(name, available_policies()) from None
    return factory(params or {})
