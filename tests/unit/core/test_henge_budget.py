"""A budget of changes per job (``henge``'s ``changes_per_day``): a token bucket spent on each
change of a job's executors, and a job without a change left held where it is."""

from __future__ import annotations

import pytest

from scheduler.core.model import ActionKind
from scheduler.core.policies.henge import budget
from scheduler.core.policies.henge.budget import Budget
from scheduler.core.policies.henge.product import HengeProductPolicy
from scheduler.core.policies.henge.product_settings import ProductSettings
from scheduler.core.policies.henge.product_state import ProductState, dump, load

from .henge_builders import at
from .test_henge_product import decide, fitted, streaming, targets


def test_a_new_job_has_its_burst_and_earns_changes_back_at_the_daily_rate() -> None:
    assert budget.changes_left(None, 0.0, 24.0, 2.0) == 2.0
    spent = budget.spend({}, ["a", "a"], 100.0, 24.0, 2.0)
    assert spent["a"] == Budget(0.0, 100.0)
    # 24 a day is one an hour: half an hour later half a change, never more than the burst.
    assert budget.changes_left(spent["a"], 1900.0, 24.0, 2.0) == pytest.approx(0.5)
    assert budget.changes_left(spent["a"], 100.0 + 5 * 3600.0, 24.0, 2.0) == 2.0
    # A revert it could not afford leaves it in debt, paid back before its next change.
    debt = budget.spend(spent, ["a"], 100.0, 24.0, 2.0)["a"]
    assert debt.left == -1.0
    assert budget.changes_left(debt, 100.0 + 2 * 3600.0, 24.0, 2.0) == pytest.approx(1.0)
    assert budget.wait_s(debt, 100.0, 24.0, 2.0) == pytest.approx(2 * 3600.0)
    assert budget.wait_s(None, 100.0, 24.0, 2.0) == 0.0


def test_budgets_survive_the_state_json() -> None:
    state = ProductState(budgets={"a": Budget(0.25, 1_700_000_000.0), "b": Budget(-1.0, 5.0)})
    assert load(dump(state)).budgets == state.budgets


def rationed(per_day: float) -> HengeProductPolicy:
    return HengeProductPolicy(ProductSettings(changes_per_day=per_day))


def test_a_job_without_a_change_left_is_held_and_one_with_a_change_is_grown() -> None:
    low = streaming("low", 4, 4000.0)  # misses; needs 13, and the free cores are there
    spent = {"low": Budget(0.5, at(-1800).timestamp())}  # half a change, 30 min ago
    state = ProductState(models=fitted([low]), budgets=spent)
    plan, _ = decide(rationed(0.5), [low], state, 0)  # earns a change every two days
    assert plan.action is ActionKind.NONE and "missing their SLO: low" in plan.reason
    # Half a change short, at half a change a day, less the 30 min earned: the reason says so.
    assert "held, no change left in its budget: low (one in 1410 min)" in plan.reason
    # At 24 a day it has earned the other half: it grows, and the change is spent.
    plan, after = decide(rationed(24.0), [low], state, 0)
    assert plan.action is ActionKind.RECONFIGURE and targets(plan)["low"] >= 13
    assert after.budgets["low"].left == pytest.approx(0.0)
    # Without a budget the same job grows and nothing is counted.
    plan, after = decide(rationed(0.0), [low], state, 0)
    assert plan.action is ActionKind.RECONFIGURE and after.budgets == spent


def test_a_donor_without_a_change_left_gives_nothing() -> None:
    hi, lo = streaming("hi", 4, 4000.0, priority=90.0), streaming("lo", 30, 2000.0)
    models = fitted([hi, lo])
    plan, after = decide(rationed(24.0), [hi, lo], ProductState(models=models), 0, free=0.0)
    moved = targets(plan)
    assert moved["hi"] > 4 and moved["lo"] < 30  # the top tier takes from the bottom one
    assert after.budgets["hi"].left == after.budgets["lo"].left == pytest.approx(1.0)
    broke = ProductState(models=models, budgets={"lo": Budget(0.0, at(0).timestamp())})
    plan, _ = decide(rationed(24.0), [hi, lo], broke, 0, free=0.0)
    assert "lo" not in targets(plan)


def test_a_budget_is_refused_below_zero_and_a_burst_below_one() -> None:
    with pytest.raises(ValueError, match="changes_per_day"):
        ProductSettings(changes_per_day=-1.0)
    with pytest.raises(ValueError, match="change_burst"):
        ProductSettings(changes_per_day=24.0, change_burst=0.5)


def test_a_surplus_waits_for_a_change_and_keeps_its_time_meanwhile() -> None:
    big = streaming("big", 30, 500.0)  # meets its SLO with far more than it needs
    long_ago = at(-4000).timestamp()  # a surplus for longer than stabilization_s (1 h)
    broke = {"big": Budget(0.0, at(0).timestamp())}
    state = ProductState(models=fitted([big]), surplus_since={"big": long_ago}, budgets=broke)
    plan, after = decide(rationed(24.0), [big], state, 0)
    assert plan.action is ActionKind.NONE and after.surplus_since == {"big": long_ago}
    plan, _ = decide(rationed(24.0), [big], after, 3600)  # a change earned
    assert "give back unused executors" in plan.reason and targets(plan)["big"] < 30
